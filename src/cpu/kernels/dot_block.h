// The tile kernel shared by every block-quantized weight type: walks the blocks of NW weight
// rows and NA activation rows, and leaves the arithmetic of one block pair to a per-type
// decoder.
//
// A decoder W provides:
//   Block, ActBlock     weight and activation block layouts (same element count)
//   kBlock              elements per block
//   float scalar(const Block&, const ActBlock&)
//                       the pair's contribution, portable path
// and, for the AVX2 path:
//   Act, Act load(const ActBlock&)
//                       what is read once per activation block and shared by all weight rows
//   template <int NA> void accumulate(const Block&, const Act (&)[NA], __m256 (&acc)[NA])
//                       adds one weight block's products with NA activation blocks into f32
//                       lanes, one accumulator per activation row
// Each pair's lanes are summed in a fixed order at the end (simd::hsum), and nothing a pair
// computes depends on the other rows of the tile, which is the contract of dot.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu/kernels/simd.h"

namespace strata::cpu::STRATA_KERNEL_NS {

template <class W>
struct BlockDot {
  template <int NW, int NA>
  static void run(int64_t k, const uint8_t* w, size_t ldw, const uint8_t* a, size_t lda, float* out,
                  int64_t ldo_w, int64_t ldo_a) {
    using WBlock = typename W::Block;
    using ABlock = typename W::ActBlock;
    const int64_t nblocks = k / W::kBlock;
    const auto wrow = [&](int r) { return reinterpret_cast<const WBlock*>(w + r * ldw); };
    const auto arow = [&](int c) { return reinterpret_cast<const ABlock*>(a + c * lda); };
#if defined(STRATA_CPU_AVX2)
    const uint8_t* next = simd::prefetch_origin(w, NW * ldw);
    __m256 acc[NW][NA];
    for (int r = 0; r < NW; ++r) {
      for (int c = 0; c < NA; ++c) acc[r][c] = _mm256_setzero_ps();
    }
    for (int64_t b = 0; b < nblocks; ++b) {
      typename W::Act act[NA];
      for (int c = 0; c < NA; ++c) act[c] = W::load(arow(c)[b]);
      simd::prefetch_tile_ahead<NW * sizeof(WBlock)>(next,
                                                     static_cast<size_t>(NW * b) * sizeof(WBlock));
      for (int r = 0; r < NW; ++r) W::template accumulate<NA>(wrow(r)[b], act, acc[r]);
    }
    for (int r = 0; r < NW; ++r) {
      for (int c = 0; c < NA; ++c) out[r * ldo_w + c * ldo_a] = simd::hsum(acc[r][c]);
    }
#else
    for (int r = 0; r < NW; ++r) {
      for (int c = 0; c < NA; ++c) {
        float sum = 0.0f;
        for (int64_t b = 0; b < nblocks; ++b) sum += W::scalar(wrow(r)[b], arow(c)[b]);
        out[r * ldo_w + c * ldo_a] = sum;
      }
    }
#endif
  }
};

}  // namespace strata::cpu::STRATA_KERNEL_NS
