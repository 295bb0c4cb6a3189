#include "core/quants/k_scales.h"

#include <algorithm>
#include <cmath>

#include "core/quants/rounding.h"

#include "core/quants/strict_float.h"

namespace strata::core {
namespace {

constexpr int kSub = 32;
constexpr int kNumSub = kQK_K / kSub;

void pack_scale_min(uint8_t* scales, int sub, uint8_t scale, uint8_t min) {
  if (sub < 4) {
    scales[sub] = scale;
    scales[sub + 4] = min;
  } else {
    scales[sub + 4] = static_cast<uint8_t>((scale & 0x0f) | ((min & 0x0f) << 4));
    scales[sub - 4] |= static_cast<uint8_t>((scale >> 4) << 6);
    scales[sub] |= static_cast<uint8_t>((min >> 4) << 6);
  }
}

/// A fitted scale or min as a 6-bit multiple of 1 / inverse. The narrowing to a byte before
/// the clamp is ggml's, kept so odd inputs give the same bytes.
uint8_t to_6_bits(float value, float inverse) {
  return std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inverse * value)));
}

}  // namespace

ScaleMinBlock quantize_scale_min(const float* x, int nmax, const ScaleMinSearch& search) {
  ScaleMinBlock out{};
  float scales[kNumSub], mins[kNumSub];
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < kNumSub; ++j) {
    const float* xs = x + kSub * j;
    // Weight each element by the sub-block's RMS plus its own magnitude: large values matter
    // more, but small ones are not ignored.
    float sum_x2 = 0.0f;
    for (int l = 0; l < kSub; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / static_cast<float>(kSub));
    float weights[kSub];
    for (int l = 0; l < kSub; ++l) weights[l] = av_x + std::fabs(xs[l]);
    scales[j] = fit_scale_min(kSub, nmax, xs, weights, out.levels + kSub * j, &mins[j], search);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }

  const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
  for (int j = 0; j < kNumSub; ++j) {
    pack_scale_min(out.scales, j, to_6_bits(scales[j], inv_scale), to_6_bits(mins[j], inv_min));
  }
  out.d = float_to_half(max_scale / 63.0f);
  out.dmin = float_to_half(max_min / 63.0f);

  // Round again against the scales actually stored. A sub-block whose scale quantized to 0
  // keeps the levels of its fit (they multiply 0 anyway).
  const float d = half_to_float(out.d);
  const float dmin = half_to_float(out.dmin);
  for (int j = 0; j < kNumSub; ++j) {
    const ScaleMin sm = unpack_scale_min(out.scales, j);
    const float ds = d * static_cast<float>(sm.scale);
    if (ds == 0.0f) continue;
    const float dm = dmin * static_cast<float>(sm.min);
    for (int l = 0; l < kSub; ++l) {
      out.levels[kSub * j + l] =
          static_cast<uint8_t>(nearest_int((x[kSub * j + l] + dm) / ds, 0, nmax));
    }
  }
  return out;
}

}  // namespace strata::core
