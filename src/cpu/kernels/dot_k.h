// What the K-quant dot kernels (q2_k .. q6_k weights with q8_k activations) share.
//
// Every K-quant weight is d * sc * (u - offset) or d * sc * u - dmin * m per sub-block, with
// small integers sc, m, u. Per super-block the kernels therefore compute
//   sum_sub sc * dot(u, y)  and  sum_sub (offset or m) * bsum(y)
// exactly in int32 lanes (q8_k stores the sums of y per 16 in `bsums`), and only then scale by
// d * d_a and dmin * d_a in f32: one rounding per super-block and lane.
#pragma once

#include <cstdint>
#include <utility>

#include "core/blocks.h"
#include "cpu/kernels/simd_int.h"

namespace strata::cpu::STRATA_KERNEL_NS::kquant {

using core::BlockQ8_K;
using core::kQK_K;

template <class F, int... I>
[[gnu::always_inline]] inline void unroll_sequence(F& f, std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, I>{}), ...);
}

/// Calls f(std::integral_constant<int, I>) for I = 0..N-1, so shift counts and offsets derived
/// from I are compile-time constants. Kernels mark their lambdas always_inline too: GCC
/// otherwise keeps some of them as calls inside the hottest loops.
template <int N, class F>
[[gnu::always_inline]] inline void unroll(F&& f) {
  unroll_sequence(f, std::make_integer_sequence<int, N>{});
}

/// The decoder parts every K-quant type shares (see dot_block.h).
struct KDecoder {
  using ActBlock = BlockQ8_K;
  static constexpr int kBlock = kQK_K;

  /// An activation super-block as the vector path reads it.
  struct Act {
    const int8_t* q;
    const int16_t* bsums;
    float d;
  };
  static Act load(const ActBlock& y) { return {y.qs, y.bsums, y.d}; }
};

/// sum_sub scale[sub] * (sum of the 16 quants y[16 sub ..]) for 16 sub-blocks, portable.
inline int32_t scaled_bsums(const int8_t* scale, const BlockQ8_K& y) {
  int32_t s = 0;
  for (int sub = 0; sub < kQK_K / 16; ++sub) s += scale[sub] * y.bsums[sub];
  return s;
}

/// sum_sub scale[sub] * dot(u[16 sub ..], y[16 sub ..]) over 256 unsigned levels, portable.
inline int32_t scaled_dot16(const int8_t* scale, const uint8_t* u, const BlockQ8_K& y) {
  int32_t s = 0;
  for (int sub = 0; sub < kQK_K / 16; ++sub) {
    int32_t d = 0;
    for (int j = 16 * sub; j < 16 * sub + 16; ++j) d += u[j] * y.qs[j];
    s += scale[sub] * d;
  }
  return s;
}

#if defined(STRATA_CPU_AVX2)

inline __m256i load256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

/// For the 32 elements of group G (two sub-blocks of 16): scales[2G] in the low eight int16
/// lanes, scales[2G + 1] in the high eight, from the 16 int8 scales of a super-block.
template <int G>
inline __m256i pair_scales(__m128i scales) {
  constexpr int64_t kOnes = 0x0101010101010101ll;
  const __m128i pick = _mm_set_epi64x(kOnes * (2 * G + 1), kOnes * (2 * G));
  return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales, pick));
}

/// sum_sub scale[sub] * bsum[sub] of every activation row over the 16 sub-blocks, in 8 lanes.
inline __m256i scaled_bsums(__m256i scales16, const int16_t* bsums) {
  return _mm256_madd_epi16(scales16, load256(bsums));
}

/// Adds group G (32 unsigned levels u, two sub-blocks of 16 with int8 scales) of one weight
/// super-block times every activation row into its int32 lanes.
template <int G, int NA>
inline void add_group16(__m256i u, __m128i scales, const KDecoder::Act (&act)[NA],
                        __m256i (&isum)[NA]) {
  const __m256i sc = pair_scales<G>(scales);
  for (int c = 0; c < NA; ++c) {
    isum[c] = simd::madd_acc(isum[c], simd::pairs_u8_i8(u, load256(act[c].q + 32 * G)), sc);
  }
}

#endif  // STRATA_CPU_AVX2

#if defined(STRATA_CPU_AVX512)

inline __m512i load512(const void* p) {
  return _mm512_loadu_si512(p);
}

/// For the 64 elements of groups 2J and 2J + 1 (sub-blocks S = 4J .. 4J + 3 of 16):
/// scales[S + i] in the eight int16 lanes of 128-bit lane i.
template <int J>
inline __m512i quad_scales(__m128i scales) {
  constexpr int64_t kOnes = 0x0101010101010101ll;
  constexpr int64_t kS = 4 * J;
  const __m256i pick =
      _mm256_set_epi64x(kOnes * (kS + 3), kOnes * (kS + 2), kOnes * (kS + 1), kOnes * kS);
  return _mm512_cvtepi8_epi16(_mm256_shuffle_epi8(_mm256_broadcastsi128_si256(scales), pick));
}

/// add_group16 for groups 2J and 2J + 1 at once: u holds their 64 unsigned levels.
template <int J, int NA>
inline void add_groups16(__m512i u, __m128i scales, const KDecoder::Act (&act)[NA],
                         __m512i (&isum)[NA]) {
  const __m512i sc = quad_scales<J>(scales);
  for (int c = 0; c < NA; ++c) {
    isum[c] = simd::madd_acc(isum[c], simd::pairs_u8_i8(u, load512(act[c].q + 64 * J)), sc);
  }
}

#endif  // STRATA_CPU_AVX512

}  // namespace strata::cpu::STRATA_KERNEL_NS::kquant
