// Q2_K: 2-bit levels, sub-blocks of 16 with 4-bit scales and mins.
#include <cmath>

#include "core/blocks.h"
#include "core/quants/k_fit.h"
#include "core/quants/quants.h"
#include "core/quants/rounding.h"

#include "core/quants/strict_float.h"

namespace strata::core {
namespace {

constexpr int kSub = 16;
constexpr int kNumSub = kQK_K / kSub;

/// Byte and shift of element e's 2 bits: each 128 elements share 32 bytes, 32 per bit pair.
inline int byte_of(int e) {
  return 32 * (e / 128) + e % 32;
}
inline int shift_of(int e) {
  return 2 * ((e % 128) / 32);
}

}  // namespace

void q2_k_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ2_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = half_to_float(b[i].d);
    const float dmin = half_to_float(b[i].dmin);
    const uint8_t* sc = b[i].scales;
    // Walk the elements in order: per 128, four bit pairs, each two sub-blocks of 16 bytes.
    for (const uint8_t* q = b[i].qs; q < b[i].qs + kQK_K / 4; q += 32) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int half = 0; half < 32; half += kSub, ++sc) {
          const float dl = d * static_cast<float>(*sc & 0x0f);
          const float ml = dmin * static_cast<float>(*sc >> 4);
          for (int l = half; l < half + kSub; ++l) {
            *dst++ = dl * static_cast<float>((q[l] >> shift) & 3) - ml;
          }
        }
      }
    }
  }
}

// Each sub-block's scale and min are fitted by minimising the |x|-weighted absolute error, then
// quantized to 4 bits against the block's largest scale and largest min.
void q2_k_from_float(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ2_K*>(dst);
  const ScaleMinSearch search{-0.5f, 0.1f, 15, true};
  for (int64_t i = 0; i < n / kQK_K; ++i, src += kQK_K) {
    uint8_t L[kQK_K];
    float scales[kNumSub], mins[kNumSub];
    float max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < kNumSub; ++j) {
      float weights[kSub];
      for (int l = 0; l < kSub; ++l) weights[l] = std::fabs(src[kSub * j + l]);
      scales[j] = fit_scale_min(kSub, 3, src + kSub * j, weights, L + kSub * j, &mins[j], search);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }

    for (int j = 0; j < kNumSub; ++j) b[i].scales[j] = 0;
    b[i].d = float_to_half(0.0f);
    b[i].dmin = float_to_half(0.0f);
    if (max_scale > 0.0f) {
      const float iscale = 15.0f / max_scale;
      for (int j = 0; j < kNumSub; ++j) {
        b[i].scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
      }
      b[i].d = float_to_half(max_scale / 15.0f);
    }
    if (max_min > 0.0f) {
      const float iscale = 15.0f / max_min;
      for (int j = 0; j < kNumSub; ++j) {
        b[i].scales[j] |= static_cast<uint8_t>(nearest_int(iscale * mins[j]) << 4);
      }
      b[i].dmin = float_to_half(max_min / 15.0f);
    }

    // Round again against the stored scales; a sub-block with scale 0 keeps its fitted levels.
    const float d = half_to_float(b[i].d);
    const float dmin = half_to_float(b[i].dmin);
    for (int j = 0; j < kNumSub; ++j) {
      const float dl = d * static_cast<float>(b[i].scales[j] & 0x0f);
      if (dl == 0.0f) continue;
      const float ml = dmin * static_cast<float>(b[i].scales[j] >> 4);
      for (int l = 0; l < kSub; ++l) {
        L[kSub * j + l] = static_cast<uint8_t>(nearest_int((src[kSub * j + l] + ml) / dl, 0, 3));
      }
    }

    for (int j = 0; j < kQK_K / 4; ++j) b[i].qs[j] = 0;
    for (int e = 0; e < kQK_K; ++e) {
      b[i].qs[byte_of(e)] |= static_cast<uint8_t>(L[e] << shift_of(e));
    }
  }
}

}  // namespace strata::core
