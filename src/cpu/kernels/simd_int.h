// Integer steps shared by the quantized dot kernels: byte products summed into int32 lanes,
// with AVX-512 VNNI / BW instructions where the build has them.
//
// Every helper returns exact integer results (its operands are bounded so nothing saturates),
// and the VNNI and AVX2 forms of a helper fill the same lanes, so they never change a kernel's
// output. The 512-bit q2_k and q3_k paths (STRATA_CPU_AVX512) group the products into lanes
// differently, so their f32 sums round differently from an AVX2-only build's (both within the
// reference's tolerance; each build is bit-identical with itself for every thread count and
// tile shape). q4_k, q5_k and q6_k round in llama.cpp's order on every path (dot_k_order.h).
#pragma once

#include <cstdint>

#include "cpu/kernels/simd.h"

// Byte dot products in one instruction: AVX-512 VNNI's 256-bit form, or the same instruction in
// VEX form (AVX-VNNI) on CPUs without AVX-512.
#if defined(STRATA_CPU_AVX2) && defined(__AVX512VNNI__) && defined(__AVX512VL__)
#define STRATA_CPU_VNNI 1
#elif defined(STRATA_CPU_AVX2) && defined(__AVXVNNI__)
#define STRATA_CPU_VNNI 1
#define STRATA_CPU_AVX_VNNI 1
#endif
#if defined(STRATA_CPU_AVX2) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define STRATA_CPU_AVX512BW 1
#endif
// 512-bit integer dot products: the K-quant kernels take two sub-blocks per instruction.
#if defined(STRATA_CPU_AVX512BW) && defined(STRATA_CPU_VNNI)
#define STRATA_CPU_AVX512 1
#endif

namespace strata::cpu::STRATA_KERNEL_NS::simd {

#if defined(STRATA_CPU_AVX2)

#if defined(STRATA_CPU_VNNI)
/// acc + (int32 lane i: the sum of u[j] * y[j] over bytes j = 4i..4i+3), u unsigned, y signed:
/// one vpdpbusd in whichever encoding the set has (EVEX with AVX-512 VNNI, else AVX-VNNI's VEX).
[[gnu::always_inline]] inline __m256i dpbusd(__m256i acc, __m256i u, __m256i y) {
#if defined(STRATA_CPU_AVX_VNNI)
  return _mm256_dpbusd_avx_epi32(acc, u, y);
#else
  return _mm256_dpbusd_epi32(acc, u, y);
#endif
}
#endif

/// Eight int32 lanes, lane i the sum of u[j] * y[j] over bytes j = 4i..4i+3 (u unsigned, y
/// signed). Without VNNI the pairs go through int16: |u[j] y[j] + u[j+1] y[j+1]| must stay
/// below 2^15, which holds for every caller (u <= 128 with |y| <= 127, or u <= 63).
inline __m256i dot_u8_i8(__m256i u, __m256i y) {
#if defined(STRATA_CPU_VNNI)
  return dpbusd(_mm256_setzero_si256(), u, y);
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, y), _mm256_set1_epi16(1));
#endif
}

/// dot_u8_i8 of two signed operands: |x| is paired with y carrying x's sign. y must not hold
/// -128 (activations never do: core's q8 quantizers stop at -127).
inline __m256i dot_i8_i8(__m256i x, __m256i y) {
  return dot_u8_i8(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

/// Sixteen int16 lanes, lane i = u[2i] y[2i] + u[2i+1] y[2i+1] (same bounds as dot_u8_i8).
inline __m256i pairs_u8_i8(__m256i u, __m256i y) {
  return _mm256_maddubs_epi16(u, y);
}

/// acc + (int32 lane i: p[2i] s[2i] + p[2i+1] s[2i+1]) for int16 p and s.
inline __m256i madd_acc(__m256i acc, __m256i p, __m256i s) {
#if defined(STRATA_CPU_AVX_VNNI)
  return _mm256_dpwssd_avx_epi32(acc, p, s);
#elif defined(STRATA_CPU_VNNI)
  return _mm256_dpwssd_epi32(acc, p, s);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(p, s));
#endif
}

/// 32 bytes, byte j 0xff where bit j of `bits` is set and 0 elsewhere.
inline __m256i bits_to_bytes(uint32_t bits) {
#if defined(STRATA_CPU_AVX512BW)
  return _mm256_movm_epi8(static_cast<__mmask32>(bits));
#else
  // Byte j takes byte j / 8 of the word, then tests its own bit j % 8.
  const __m256i spread =
      _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int32_t>(bits)),
                          _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                            0x0101010101010101, 0x0000000000000000));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
#endif
}

/// Bit `From` of every byte moved to bit `To` of the same byte; the other bits are garbage, for
/// the caller to mask. (The shifts are 16-bit, but a bit crossing between the two bytes of a
/// word never lands on bit `To`.)
template <int From, int To>
inline __m256i move_bit(__m256i v) {
  if constexpr (From > To) return _mm256_srli_epi16(v, From - To);
  if constexpr (From < To) return _mm256_slli_epi16(v, To - From);
  return v;
}

#endif  // STRATA_CPU_AVX2

#if defined(STRATA_CPU_AVX512)

// GCC 12's unmasked broadcasts, inserts and extracts start from an "undefined" register and
// trip -Wmaybe-uninitialized; the zero-masked forms below compile to the same instructions.

/// v in both 256-bit halves.
inline __m512i broadcast256(__m256i v) {
  return _mm512_maskz_broadcast_i64x4(0xff, v);
}

/// v with its high 256-bit half shifted right by S bits per 16-bit lane (the low half as is).
template <int S>
inline __m512i shift_high_half(__m512i v) {
  return _mm512_mask_srli_epi16(v, 0xffff0000u, v, S);
}

/// The two 256-bit halves added lane by lane.
inline __m256i add_halves(__m512i v) {
  return _mm256_add_epi32(_mm512_maskz_extracti64x4_epi64(0xff, v, 0),
                          _mm512_maskz_extracti64x4_epi64(0xff, v, 1));
}

/// move_bit for 512-bit vectors.
template <int From, int To>
inline __m512i move_bit(__m512i v) {
  if constexpr (From > To) return _mm512_srli_epi16(v, From - To);
  if constexpr (From < To) return _mm512_slli_epi16(v, To - From);
  return v;
}

/// madd_acc for 512-bit vectors: acc + (int32 lane i: p[2i] s[2i] + p[2i+1] s[2i+1]).
inline __m512i madd_acc(__m512i acc, __m512i p, __m512i s) {
  return _mm512_dpwssd_epi32(acc, p, s);
}

/// pairs_u8_i8 for 512-bit vectors.
inline __m512i pairs_u8_i8(__m512i u, __m512i y) {
  return _mm512_maddubs_epi16(u, y);
}

#endif  // STRATA_CPU_AVX512

}  // namespace strata::cpu::STRATA_KERNEL_NS::simd
