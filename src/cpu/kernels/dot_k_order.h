// llama.cpp's rounding order for the q4_k, q5_k and q6_k dot products, shared by their kernels.
//
// Our reference logits come from llama.cpp's x86 kernels (ggml_vec_dot_q4_K_q8_K and its q5_K,
// q6_K siblings, AVX2 code, June 2025), and one last-bit difference in a dot product flips a
// later int8 rounding of an activation. So these kernels round exactly where those do:
//
//   per super-block, eight int32 lanes; lane m is the exact sum over the elements e with
//   (e % 32) / 4 == m of scale(e) * level(e) * y[e], and is added to its own f32 lane as
//   acc[m] = fma(d, lane, acc[m]) with d = y.d * d_w (one f32 product);
//   at the end, sum8(acc) in ggml's hsum_float_8 order.
//
// q4_k and q5_k also subtract their mins (see dot_q4_q5_k.cpp). The integer lanes are exact,
// so how a kernel computes them is free; only their partition and the f32 steps are fixed.
// Every kernel does the same per-pair steps for any tile shape (the contract of dot.h).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/blocks.h"
#include "cpu/kernels/dot_k.h"
#include "cpu/kernels/simd.h"

namespace strata::cpu::STRATA_KERNEL_NS::kquant {

/// ggml's hsum_float_8: high half plus low half, then movehl, then movehdup.
inline float sum8(const float* a) {
  return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}

/// The same reduction of a 4-lane accumulator (movehl, then movehdup).
inline float sum4(const float* a) {
  return (a[0] + a[2]) + (a[1] + a[3]);
}

/// acc[m] = fma(d, lane[m], acc[m]) for the eight lanes of one super-block, portable.
inline void fma_lanes(float d, const int32_t (&lane)[8], float (&acc)[8]) {
  for (int m = 0; m < 8; ++m) acc[m] = std::fma(d, static_cast<float>(lane[m]), acc[m]);
}

/// A tile kernel built from per-pair steps, for the plain q8_k paths (AVX2, portable). W gives
///   Block, State (one output's accumulators, value-initialised to zero),
///   template <int NA> step(const Block&, const BlockQ8_K* const (&)[NA], State (&)[NA])
///                       adds one weight super-block times NA activation super-blocks,
///   float finish(const State&).
template <class W>
struct PairwiseDot {
  template <int NW, int NA>
  static void run(int64_t k, const uint8_t* w, size_t ldw, const uint8_t* a, size_t lda, float* out,
                  int64_t ldo_w, int64_t ldo_a) {
    using Block = typename W::Block;
    typename W::State st[NW][NA] = {};
    [[maybe_unused]] const uint8_t* next = simd::prefetch_origin(w, NW * ldw);
    for (int64_t b = 0; b < k / kQK_K; ++b) {
#if defined(STRATA_CPU_AVX2)
      simd::prefetch_tile_ahead<NW * sizeof(Block)>(next,
                                                    static_cast<size_t>(NW * b) * sizeof(Block));
#endif
      const BlockQ8_K* y[NA];
      for (int c = 0; c < NA; ++c) y[c] = reinterpret_cast<const BlockQ8_K*>(a + c * lda) + b;
      for (int r = 0; r < NW; ++r) {
        const Block* x = reinterpret_cast<const Block*>(w + r * ldw) + b;
        W::template step<NA>(*x, y, st[r]);
      }
    }
    for (int r = 0; r < NW; ++r) {
      for (int c = 0; c < NA; ++c) out[r * ldo_w + c * ldo_a] = W::finish(st[r][c]);
    }
  }
};

#if defined(STRATA_CPU_AVX512)

// The 512-bit kernels hold two weight rows side by side: lanes 0-7 belong to the first row of a
// pair, lanes 8-15 to the second, so one instruction serves both.

/// 32 bytes of each row: [p0[0..31] | p1[0..31]].
inline __m512i row_pair(const void* p0, const void* p1) {
  return _mm512_maskz_inserti64x4(0xff, simd::broadcast256(load256(p0)), load256(p1), 1);
}

/// 32 bytes of an activation row in both halves.
inline __m512i both_halves(const void* p) {
  return simd::broadcast256(load256(p));
}

/// x0 in lanes 0-7, x1 in lanes 8-15.
inline __m512 pair_ps(float x0, float x1) {
  return _mm512_mask_broadcastss_ps(_mm512_set1_ps(x0), 0xff00, _mm_set_ss(x1));
}

/// acc + (d_pair * y_d) * lanes, lane by lane: d_pair holds the two rows' f16 scales as f32.
inline __m512 fma_pair(__m512 acc, __m512 d_pair, float y_d, __m512i lanes) {
  const __m512 d = _mm512_mul_ps(d_pair, _mm512_set1_ps(y_d));
  return _mm512_fmadd_ps(d, _mm512_maskz_cvtepi32_ps(0xffff, lanes), acc);
}

/// sum8 of lanes 0-7 (half 0) or 8-15 (half 1).
inline float sum8_half(__m512 v, int half) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  return sum8(lanes + 8 * half);
}

#endif  // STRATA_CPU_AVX512

}  // namespace strata::cpu::STRATA_KERNEL_NS::kquant
