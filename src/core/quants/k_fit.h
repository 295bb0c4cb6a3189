// The searches K-quant quantizers use to pick a sub-block's scale (and min) and its integer
// levels: ggml's make_qkx2_quants, make_q3_quants and make_qx_quants (the variants its
// reference quantizers call, without importance weights). Float operations are evaluated in
// the same order as ggml's, so the chosen levels match its bit for bit.
#pragma once

#include <cstdint>

namespace strata::core {

/// Below this magnitude a group of values counts as all zeros (ggml's GROUP_MAX_EPS).
inline constexpr float kGroupMaxEps = 1e-15f;

/// Parameters of the scale search in `fit_scale_min`: candidate inverse scales
/// (nmax + rmin + rdelta * k) / (max - min) for k = 0..nstep.
struct ScaleMinSearch {
  float rmin;
  float rdelta;
  int nstep;
  bool use_mad;  ///< minimise weighted absolute error instead of weighted squared error
};

/// Fits x[i] ~= scale * L[i] - min with L[i] in [0, nmax] and min >= 0, minimising the error
/// weighted by `w`, for a group of n <= 32. Writes the levels to L and min to *min; returns scale
/// (0 for a constant block, whose value is then carried by min alone when it is negative).
float fit_scale_min(int n, int nmax, const float* x, const float* w, uint8_t* L, float* min,
                    const ScaleMinSearch& search);

/// Fits x[i] ~= scale * (L[i] - nmax) with L[i] in [0, 2 * nmax - 1]; with `refine`, moves
/// levels one at a time while that lowers the x^2-weighted squared error (Q3_K). Returns the
/// (possibly negative) scale; 0 and all-zero levels for a block of (near) zeros.
float fit_symmetric_refined(int n, int nmax, const float* x, int8_t* L, bool refine);

/// Fits x[i] ~= scale * (L[i] - nmax) with L[i] in [0, 2 * nmax - 1], trying 19 inverse scales
/// around -nmax / max and keeping the one with the least x^2-weighted squared error (Q6_K).
float fit_symmetric_search(int n, int nmax, const float* x, int8_t* L);

}  // namespace strata::core
