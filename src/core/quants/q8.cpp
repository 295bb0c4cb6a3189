// Q8_0 (weights and activations) and Q8_1 (activations for Q4_1 / Q5_1 weights): 32 signed
// bytes and an fp16 scale; Q8_1 adds the block's scaled sum.
#include <algorithm>
#include <cmath>

#include "core/blocks.h"
#include "core/quants/quants.h"
#include "core/quants/rounding.h"

#include "core/quants/strict_float.h"

namespace strata::core {
namespace {

/// The scale that maps the block's largest magnitude to 127.
float absmax_scale(const float* x) {
  float amax = 0.0f;
  for (int j = 0; j < kQK8_0; ++j) amax = std::max(amax, std::fabs(x[j]));
  return amax / 127.0f;
}

}  // namespace

void q8_0_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ8_0*>(src);
  for (int64_t i = 0; i < n / kQK8_0; ++i, dst += kQK8_0) {
    const float d = half_to_float(b[i].d);
    for (int j = 0; j < kQK8_0; ++j) dst[j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

// Rounds half away from zero (roundf), as ggml does for the 8-bit types.
void q8_0_from_float(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / kQK8_0; ++i, src += kQK8_0) {
    const float d = absmax_scale(src);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = float_to_half(d);
    for (int j = 0; j < kQK8_0; ++j)
      b[i].qs[j] = static_cast<int8_t>(round_int(src[j] * id, -127, 127));
  }
}

void q8_1_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ8_1*>(src);
  for (int64_t i = 0; i < n / kQK8_1; ++i, dst += kQK8_1) {
    const float d = half_to_float(b[i].d);
    for (int j = 0; j < kQK8_1; ++j) dst[j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

// s is computed from the unrounded scale d, as ggml does, then rounded to fp16.
void q8_1_from_float(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_1*>(dst);
  for (int64_t i = 0; i < n / kQK8_1; ++i, src += kQK8_1) {
    const float d = absmax_scale(src);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = float_to_half(d);
    int sum = 0;
    for (int j = 0; j < kQK8_1; ++j) {
      b[i].qs[j] = static_cast<int8_t>(round_int(src[j] * id, -127, 127));
      sum += b[i].qs[j];
    }
    b[i].s = float_to_half(static_cast<float>(sum) * d);
  }
}

}  // namespace strata::core
