// Dot products of symmetric 32-element blocks with q8_0 activations: q8_0, q4_0 and q5_0
// weights (weight = d * q with signed q).
//
// Per block the integer dot product is exact (|sum| <= 32 * 128 * 127 < 2^24, so also exact as
// a float); it is scaled by d_w * d_a (exact in f32: two 11-bit mantissas) and accumulated in
// f32. The rounding error is therefore that of an f32 sum of k / 32 terms.
#include <cstring>

#include "core/blocks.h"
#include "core/float16.h"
#include "cpu/kernels/dot.h"
#include "cpu/kernels/dot_block.h"
#include "cpu/kernels/dot_tile.h"
#include "cpu/kernels/simd_int.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

using core::BlockQ4_0;
using core::BlockQ5_0;
using core::BlockQ8_0;
using core::kQK8_0;

// Weight decoders: the 32 quants of a block as int8 in element order, scalar and as a vector;
// the arithmetic around them is SymmetricDot's.
struct Q8Weights {
  using Block = BlockQ8_0;
  static void quants(const Block& b, int8_t q[kQK8_0]) { std::memcpy(q, b.qs, kQK8_0); }
#if defined(STRATA_CPU_AVX2)
  static __m256i load(const Block& b) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
  }
#endif
};

struct Q4Weights {
  using Block = BlockQ4_0;
  static void quants(const Block& b, int8_t q[kQK8_0]) {
    for (int j = 0; j < kQK8_0 / 2; ++j) {
      q[j] = static_cast<int8_t>((b.qs[j] & 0x0f) - 8);
      q[j + kQK8_0 / 2] = static_cast<int8_t>((b.qs[j] >> 4) - 8);
    }
  }
#if defined(STRATA_CPU_AVX2)
  static __m256i load(const Block& b) {
    // Low nibbles are elements 0..15, high nibbles 16..31: one 128-bit half each.
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
    const __m256i nibbles = _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
    return _mm256_sub_epi8(nibbles, _mm256_set1_epi8(8));
  }
#endif
};

struct Q5Weights {
  using Block = BlockQ5_0;
  static void quants(const Block& b, int8_t q[kQK8_0]) {
    uint32_t qh;
    std::memcpy(&qh, b.qh, sizeof qh);
    for (int j = 0; j < kQK8_0 / 2; ++j) {
      const int hi_lo = static_cast<int>((qh >> j) & 1u) << 4;
      const int hi_hi = static_cast<int>((qh >> (j + kQK8_0 / 2)) & 1u) << 4;
      q[j] = static_cast<int8_t>(((b.qs[j] & 0x0f) | hi_lo) - 16);
      q[j + kQK8_0 / 2] = static_cast<int8_t>(((b.qs[j] >> 4) | hi_hi) - 16);
    }
  }
#if defined(STRATA_CPU_AVX2)
  static __m256i load(const Block& b) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
    const __m256i nibbles = _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
    uint32_t qh;
    std::memcpy(&qh, b.qh, sizeof qh);
    // q - 16 as a byte is the nibble with 0xf0 above it when the fifth bit is clear, and the
    // nibble alone when it is set.
    const __m256i high = _mm256_andnot_si256(simd::bits_to_bytes(qh), _mm256_set1_epi8(-16));
    return _mm256_or_si256(nibbles, high);
  }
#endif
};

template <class W>
struct SymmetricDot {
  using Block = typename W::Block;
  using ActBlock = BlockQ8_0;
  static constexpr int kBlock = kQK8_0;

  static float scalar(const Block& x, const ActBlock& y) {
    int8_t q[kQK8_0];
    W::quants(x, q);
    int32_t isum = 0;
    for (int j = 0; j < kQK8_0; ++j) isum += q[j] * y.qs[j];
    return static_cast<float>(isum) * (core::half_to_float(x.d) * core::half_to_float(y.d));
  }

#if defined(STRATA_CPU_AVX2)
  struct Act {
    __m256i q;
    float d;
  };
  static Act load(const ActBlock& y) {
    return {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.qs)), simd::half_to_float(y.d)};
  }
  template <int NA>
  [[gnu::always_inline]] static void accumulate(const Block& x, const Act (&act)[NA],
                                                __m256 (&acc)[NA]) {
    const __m256i q = W::load(x);
    const float d = simd::half_to_float(x.d);
    for (int c = 0; c < NA; ++c) {
      const __m256 p = _mm256_cvtepi32_ps(simd::dot_i8_i8(q, act[c].q));
      acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(d * act[c].d), p, acc[c]);
    }
  }
#endif
};

constexpr int kMaxW = 4;
constexpr int kMaxA = 2;

}  // namespace

const DotKernels kDotQ8_0 = {core::Type::kQ8_0, kMaxW, kMaxA,
                             tile_dispatch<BlockDot<SymmetricDot<Q8Weights>>, kMaxW, kMaxA>};
const DotKernels kDotQ4_0 = {core::Type::kQ8_0, kMaxW, kMaxA,
                             tile_dispatch<BlockDot<SymmetricDot<Q4Weights>>, kMaxW, kMaxA>};
const DotKernels kDotQ5_0 = {core::Type::kQ8_0, kMaxW, kMaxA,
                             tile_dispatch<BlockDot<SymmetricDot<Q5Weights>>, kMaxW, kMaxA>};

}  // namespace strata::cpu::STRATA_KERNEL_NS
