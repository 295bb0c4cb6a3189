// Float-to-integer steps shared by the quantizers. Each gives the same result as the C
// expression ggml's reference quantizers use wherever that expression is defined, and a
// defined, clamped result elsewhere (NaN, infinities, out-of-range values from degenerate
// blocks), so hostile input can produce a poor block but never undefined behaviour.
#pragma once

#include <algorithm>
#include <cmath>

namespace strata::core {

/// Round to nearest, ties to even (ggml's `nearest_int`), saturating at +-2^22.
inline int nearest_int(float v) {
  constexpr float kLimit = 4194303.0f;
  if (std::isnan(v)) return 0;
  return static_cast<int>(std::nearbyint(std::clamp(v, -kLimit, kLimit)));
}

/// `nearest_int` clamped to [lo, hi].
inline int nearest_int(float v, int lo, int hi) {
  return std::clamp(nearest_int(v), lo, hi);
}

/// Truncation toward zero (a C cast to an integer type), clamped to [lo, hi]; NaN gives lo.
inline int truncate_int(float v, int lo, int hi) {
  if (std::isnan(v)) return lo;
  return static_cast<int>(std::clamp(v, static_cast<float>(lo), static_cast<float>(hi)));
}

/// Round half away from zero (C's `roundf`), clamped to [lo, hi]; NaN gives 0.
inline int round_int(float v, int lo, int hi) {
  if (std::isnan(v)) return 0;
  return static_cast<int>(
      std::roundf(std::clamp(v, static_cast<float>(lo), static_cast<float>(hi))));
}

}  // namespace strata::core
