// Q4_K: 4-bit levels, sub-blocks of 32 with 6-bit scales and mins.
#include <cstring>

#include "core/blocks.h"
#include "core/quants/k_scales.h"
#include "core/quants/quants.h"

#include "core/quants/strict_float.h"

namespace strata::core {

void q4_k_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = half_to_float(b[i].d);
    const float dmin = half_to_float(b[i].dmin);
    const uint8_t* q = b[i].qs;
    // Each 32 bytes of qs hold two sub-blocks: the low nibbles, then the high nibbles.
    for (int sub = 0; sub < kQK_K / 32; sub += 2, q += 32) {
      const ScaleMin lo = unpack_scale_min(b[i].scales, sub);
      const ScaleMin hi = unpack_scale_min(b[i].scales, sub + 1);
      const float d1 = d * static_cast<float>(lo.scale), m1 = dmin * static_cast<float>(lo.min);
      const float d2 = d * static_cast<float>(hi.scale), m2 = dmin * static_cast<float>(hi.min);
      for (int l = 0; l < 32; ++l) *dst++ = d1 * static_cast<float>(q[l] & 0x0f) - m1;
      for (int l = 0; l < 32; ++l) *dst++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

void q4_k_from_float(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i, src += kQK_K) {
    const ScaleMinBlock s = quantize_scale_min(src, 15, {-1.0f, 0.1f, 20, false});
    b[i].d = s.d;
    b[i].dmin = s.dmin;
    std::memcpy(b[i].scales, s.scales, kKScaleBytes);
    uint8_t* q = b[i].qs;
    for (int j = 0; j < kQK_K; j += 64, q += 32) {
      for (int l = 0; l < 32; ++l) {
        q[l] = static_cast<uint8_t>(s.levels[j + l] | (s.levels[j + l + 32] << 4));
      }
    }
  }
}

}  // namespace strata::core
