// Q5_K: Q4_K's layout with 5-bit levels; the fifth bits sit in a 32-byte mask.
#include <cstring>

#include "core/blocks.h"
#include "core/quants/k_scales.h"
#include "core/quants/quants.h"

#include "core/quants/strict_float.h"

namespace strata::core {

void q5_k_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = half_to_float(b[i].d);
    const float dmin = half_to_float(b[i].dmin);
    const uint8_t* ql = b[i].qs;
    const uint8_t* qh = b[i].qh;
    // Sub-blocks 2k and 2k + 1 take their fifth bits from bits 2k and 2k + 1 of qh.
    for (int sub = 0; sub < kQK_K / 32; sub += 2, ql += 32) {
      const ScaleMin lo = unpack_scale_min(b[i].scales, sub);
      const ScaleMin hi = unpack_scale_min(b[i].scales, sub + 1);
      const float d1 = d * static_cast<float>(lo.scale), m1 = dmin * static_cast<float>(lo.min);
      const float d2 = d * static_cast<float>(hi.scale), m2 = dmin * static_cast<float>(hi.min);
      const uint8_t u1 = static_cast<uint8_t>(1u << sub), u2 = static_cast<uint8_t>(2u << sub);
      for (int l = 0; l < 32; ++l) {
        *dst++ = d1 * static_cast<float>((ql[l] & 0x0f) + ((qh[l] & u1) ? 16 : 0)) - m1;
      }
      for (int l = 0; l < 32; ++l) {
        *dst++ = d2 * static_cast<float>((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
      }
    }
  }
}

void q5_k_from_float(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i, src += kQK_K) {
    const ScaleMinBlock s = quantize_scale_min(src, 31, {-0.5f, 0.1f, 15, false});
    b[i].d = s.d;
    b[i].dmin = s.dmin;
    std::memcpy(b[i].scales, s.scales, kKScaleBytes);
    std::memset(b[i].qh, 0, sizeof b[i].qh);
    uint8_t* ql = b[i].qs;
    for (int j = 0; j < kQK_K; j += 64, ql += 32) {
      const int sub = j / 32;
      for (int l = 0; l < 32; ++l) {
        const int l1 = s.levels[j + l], l2 = s.levels[j + l + 32];
        ql[l] = static_cast<uint8_t>((l1 & 0x0f) | ((l2 & 0x0f) << 4));
        b[i].qh[l] |= static_cast<uint8_t>(((l1 >> 4) << sub) | ((l2 >> 4) << (sub + 1)));
      }
    }
  }
}

}  // namespace strata::core
