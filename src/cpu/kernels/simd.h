// Vector helpers shared by the kernels, and the ISA switch they are compiled under.
//
// Kernels have an AVX2 (+FMA, F16C) path and a portable scalar path, picked at compile time
// with STRATA_CPU_AVX2. Wider paths slot in the same way: a new macro and a new branch beside
// the AVX2 one in the kernel files (simd_int.h defines the integer ones: STRATA_CPU_VNNI,
// STRATA_CPU_AVX512BW, STRATA_CPU_AVX512).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/float16.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define STRATA_CPU_AVX2 1
#include <immintrin.h>
#endif

namespace strata::cpu::simd {

#if defined(STRATA_CPU_AVX2)

/// An f16 scale as float, branch-free (same value as core::half_to_float: the conversion is exact).
inline float half_to_float(core::Half h) {
  return _cvtsh_ss(h.bits);
}

/// Sum of the 8 lanes, always in the same order (so equal inputs give equal bits).
inline float hsum(__m256 v) {
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const __m128 s1 = _mm_add_ss(s2, _mm_movehdup_ps(s2));
  return _mm_cvtss_f32(s1);
}

/// Sum of the 4 lanes, always in the same order.
inline double hsum(__m256d v) {
  const __m128d s2 = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s2, _mm_unpackhi_pd(s2, s2)));
}

/// Largest of the 8 lanes.
inline float hmax(__m256 v) {
  const __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 m2 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  return _mm_cvtss_f32(_mm_max_ss(m2, _mm_movehdup_ps(m2)));
}

/// e^x per lane, within 2 ulp of the exact value. Results below FLT_MIN (x < -87.33) are
/// flushed to 0, which is what -inf gives; x > 88.72 gives +inf; NaN stays NaN.
///
/// Method: x = n*ln2 + r with |r| <= ln2/2 (n rounded to nearest, ln2 split in two parts so
/// n*ln2_hi is exact), e^r by its degree-7 Taylor polynomial (truncation < 1e-8 relative),
/// and 2^n built directly in the exponent field.
inline __m256 exp(__m256 x) {
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606820309417232e-6f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  // 2^n as two factors 2^(n/2) * 2^(n - n/2), each a normal float, so n = 128 (e^x just
  // below FLT_MAX) needs no special case. Lanes out of range are fixed below; clamping n only
  // keeps the integer conversion defined for them.
  const __m256 nc =
      _mm256_min_ps(_mm256_max_ps(n, _mm256_set1_ps(-150.0f)), _mm256_set1_ps(150.0f));
  const __m256i ni = _mm256_cvtps_epi32(nc);
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  const __m256i n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
  y = _mm256_blendv_ps(y, _mm256_setzero_ps(),
                       _mm256_cmp_ps(x, _mm256_set1_ps(-87.33654f), _CMP_LT_OQ));
  y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY),
                       _mm256_cmp_ps(x, _mm256_set1_ps(88.72283f), _CMP_GT_OQ));
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

#endif  // STRATA_CPU_AVX2

}  // namespace strata::cpu::simd
