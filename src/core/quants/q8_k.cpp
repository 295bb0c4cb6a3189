// Q8_K: the activation type for dot products with K-quant weights. 256 signed bytes against a
// float scale, with the sums of each 16 kept for the weights' mins.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/blocks.h"
#include "core/quants/quants.h"
#include "core/quants/rounding.h"

#include "core/quants/strict_float.h"

namespace strata::core {

void q8_k_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ8_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    for (int j = 0; j < kQK_K; ++j) *dst++ = b[i].d * static_cast<float>(b[i].qs[j]);
  }
}

// The element of largest magnitude maps to -127 (not -128, so the levels stay symmetric, which
// ggml's SIMD dot products rely on).
void q8_k_from_float(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i, src += kQK_K) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK_K; ++j) {
      if (std::fabs(src[j]) > amax) {
        amax = std::fabs(src[j]);
        max = src[j];
      }
    }
    std::memset(&b[i], 0, sizeof b[i]);
    if (amax == 0.0f) continue;
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQK_K; ++j) {
      b[i].qs[j] = static_cast<int8_t>(nearest_int(iscale * src[j], -128, 127));
    }
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += b[i].qs[16 * g + j];
      b[i].bsums[g] = static_cast<int16_t>(sum);
    }
    b[i].d = 1.0f / iscale;
  }
}

}  // namespace strata::core
