#include "core/quants/k_fit.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "core/quants/rounding.h"

#include "core/quants/strict_float.h"

// Every sum and product below is written in the order ggml evaluates it: the searches compare
// candidate errors, and a different rounding of one sum can flip a choice and change a block.

namespace strata::core {
namespace {

/// Largest group `fit_scale_min` handles (Q4_K / Q5_K sub-blocks).
constexpr int kMaxFitGroup = 32;

/// The element of largest magnitude, sign included (the first one on ties).
float signed_absmax(int n, const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  return max;
}

/// Weighted squared error (or absolute error with `use_mad`) of scale * L + min against x.
float fit_error(int n, const float* x, const float* w, const uint8_t* L, float scale, float min,
                bool use_mad) {
  float error = 0.0f;
  for (int i = 0; i < n; ++i) {
    float diff = scale * static_cast<float>(L[i]) + min - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    error += w[i] * diff;
  }
  return error;
}

}  // namespace

float fit_scale_min(int n, int nmax, const float* x, const float* w, uint8_t* L, float* the_min,
                    const ScaleMinSearch& search) {
  assert(n <= kMaxFitGroup);
  float min = x[0], max = x[0];
  float sum_w = w[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  // The min is subtracted, so it is never positive: a block of positive values starts at 0.
  if (min > 0.0f) min = 0.0f;
  if (max == min) {
    std::fill(L, L + n, uint8_t{0});
    *the_min = -min;
    return 0.0f;
  }
  const float fnmax = static_cast<float>(nmax);
  float iscale = fnmax / (max - min);
  float scale = 1.0f / iscale;
  for (int i = 0; i < n; ++i) {
    L[i] = static_cast<uint8_t>(nearest_int(iscale * (x[i] - min), 0, nmax));
  }
  float best_error = fit_error(n, x, w, L, scale, min, search.use_mad);

  // For each candidate scale, round, then solve the weighted least-squares problem for the
  // scale and min that best fit those levels; keep the best fit found.
  uint8_t Laux[kMaxFitGroup];
  for (int is = 0; is <= search.nstep; ++is) {
    iscale = (search.rmin + search.rdelta * static_cast<float>(is) + fnmax) / (max - min);
    float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = nearest_int(iscale * (x[i] - min), 0, nmax);
      const float fl = static_cast<float>(l);
      Laux[i] = static_cast<uint8_t>(l);
      sum_l += w[i] * fl;
      sum_l2 += w[i] * fl * fl;
      sum_xl += w[i] * fl * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0.0f) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0.0f) {
        this_min = 0.0f;
        this_scale = sum_xl / sum_l2;
      }
      const float error = fit_error(n, x, w, Laux, this_scale, this_min, search.use_mad);
      if (error < best_error) {
        std::copy(Laux, Laux + n, L);
        best_error = error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

float fit_symmetric_refined(int n, int nmax, const float* x, int8_t* L, bool refine) {
  const float max = signed_absmax(n, x);
  if (std::fabs(max) < kGroupMaxEps) {
    std::fill(L, L + n, int8_t{0});
    return 0.0f;
  }
  const float iscale = static_cast<float>(-nmax) / max;
  if (!refine) {
    for (int i = 0; i < n; ++i) {
      L[i] = static_cast<int8_t>(nearest_int(iscale * x[i], -nmax, nmax - 1) + nmax);
    }
    return 1.0f / iscale;
  }
  float sumlx = 0.0f, suml2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * x[i], -nmax, nmax - 1);
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  // Coordinate descent: move one level to the value that is best for the others' fit, and keep
  // the move when the block's error (equivalently, sumlx^2 / suml2) improves.
  for (int pass = 0; pass < 5; ++pass) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      const float li = static_cast<float>(L[i]);
      float slx = sumlx - w * x[i] * li;
      if (!(slx > 0.0f)) continue;
      float sl2 = suml2 - w * li * li;
      const int new_l = nearest_int(x[i] * sl2 / slx, -nmax, nmax - 1);
      if (new_l == L[i]) continue;
      const float fl = static_cast<float>(new_l);
      slx += w * x[i] * fl;
      sl2 += w * fl * fl;
      if (sl2 > 0.0f && slx * slx * suml2 > sumlx * sumlx * sl2) {
        L[i] = static_cast<int8_t>(new_l);
        sumlx = slx;
        suml2 = sl2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

float fit_symmetric_search(int n, int nmax, const float* x, int8_t* L) {
  const float max = signed_absmax(n, x);
  if (std::fabs(max) < kGroupMaxEps) {
    std::fill(L, L + n, int8_t{0});
    return 0.0f;
  }
  // Sums of the x^2-weighted least-squares fit for the levels an inverse scale rounds to.
  auto fit = [&](float iscale, float& sumlx, float& suml2) {
    sumlx = suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float l = static_cast<float>(nearest_int(iscale * x[i], -nmax, nmax - 1));
      const float w = x[i] * x[i];
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
  };
  auto set_levels = [&](float iscale) {
    for (int i = 0; i < n; ++i) {
      L[i] = static_cast<int8_t>(nearest_int(iscale * x[i], -nmax, nmax - 1) + nmax);
    }
  };
  float iscale = static_cast<float>(-nmax) / max;
  float sumlx, suml2;
  fit(iscale, sumlx, suml2);
  set_levels(iscale);
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    fit(iscale, sumlx, suml2);
    // sumlx^2 / suml2 is the error reduction of the best scale for these levels.
    if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
      set_levels(iscale);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

}  // namespace strata::core
