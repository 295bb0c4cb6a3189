// Dot products of 32-element blocks with an offset (weight = d * q + m, q unsigned) with q8_1
// activations (value = d_a * y): q4_1 and q5_1 weights.
//
// Per block: d * d_a * sum(q * y) + m * d_a * sum(y), both integer sums exact. q8_1 also
// stores s = d_a * sum(y) rounded to f16, which is what llama.cpp multiplies m by; that
// rounding (2^-11 relative) is far outside the reference's tolerance, so the kernel sums y
// itself, once per activation block, shared by every weight row of the tile.
#include <cstring>

#include "core/blocks.h"
#include "core/float16.h"
#include "cpu/kernels/dot.h"
#include "cpu/kernels/dot_block.h"
#include "cpu/kernels/dot_tile.h"
#include "cpu/kernels/simd_int.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

using core::BlockQ4_1;
using core::BlockQ5_1;
using core::BlockQ8_1;
using core::kQK8_1;

constexpr int kHalf = kQK8_1 / 2;

// Weight decoders: the 32 unsigned quants of a block in element order.
struct Q4Weights {
  using Block = BlockQ4_1;
  static void quants(const Block& b, uint8_t q[kQK8_1]) {
    for (int j = 0; j < kHalf; ++j) {
      q[j] = static_cast<uint8_t>(b.qs[j] & 0x0f);
      q[j + kHalf] = static_cast<uint8_t>(b.qs[j] >> 4);
    }
  }
#if defined(STRATA_CPU_AVX2)
  static __m256i load(const Block& b) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
  }
#endif
};

struct Q5Weights {
  using Block = BlockQ5_1;
  static void quants(const Block& b, uint8_t q[kQK8_1]) {
    uint32_t qh;
    std::memcpy(&qh, b.qh, sizeof qh);
    for (int j = 0; j < kHalf; ++j) {
      q[j] = static_cast<uint8_t>((b.qs[j] & 0x0f) | (((qh >> j) & 1u) << 4));
      q[j + kHalf] = static_cast<uint8_t>((b.qs[j] >> 4) | (((qh >> (j + kHalf)) & 1u) << 4));
    }
  }
#if defined(STRATA_CPU_AVX2)
  static __m256i load(const Block& b) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
    const __m256i nibbles = _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
    uint32_t qh;
    std::memcpy(&qh, b.qh, sizeof qh);
    const __m256i high = _mm256_and_si256(simd::bits_to_bytes(qh), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(nibbles, high);
  }
#endif
};

template <class W>
struct OffsetDot {
  using Block = typename W::Block;
  using ActBlock = BlockQ8_1;
  static constexpr int kBlock = kQK8_1;

  static float scalar(const Block& x, const ActBlock& y) {
    uint8_t q[kQK8_1];
    W::quants(x, q);
    int32_t qy = 0, ysum = 0;
    for (int j = 0; j < kQK8_1; ++j) {
      qy += q[j] * y.qs[j];
      ysum += y.qs[j];
    }
    const float da = core::half_to_float(y.d);
    return static_cast<float>(qy) * (core::half_to_float(x.d) * da) +
           static_cast<float>(ysum) * (core::half_to_float(x.m) * da);
  }

#if defined(STRATA_CPU_AVX2)
  struct Act {
    __m256i q;
    __m256 sum;  ///< the block's quants summed in 8 lanes
    float d;
  };
  static Act load(const ActBlock& y) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y.qs));
    const __m256 sum = _mm256_cvtepi32_ps(simd::dot_u8_i8(_mm256_set1_epi8(1), q));
    return {q, sum, simd::half_to_float(y.d)};
  }
  template <int NA>
  [[gnu::always_inline]] static void accumulate(const Block& x, const Act (&act)[NA],
                                                __m256 (&acc)[NA]) {
    const __m256i q = W::load(x);
    const float d = simd::half_to_float(x.d);
    const float m = simd::half_to_float(x.m);
    for (int c = 0; c < NA; ++c) {
      const __m256 p = _mm256_cvtepi32_ps(simd::dot_u8_i8(q, act[c].q));
      acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(d * act[c].d), p, acc[c]);
      acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(m * act[c].d), act[c].sum, acc[c]);
    }
  }
#endif
};

constexpr int kMaxW = 4;
constexpr int kMaxA = 2;

}  // namespace

const DotKernels kDotQ4_1 = {core::Type::kQ8_1, kMaxW, kMaxA,
                             tile_dispatch<BlockDot<OffsetDot<Q4Weights>>, kMaxW, kMaxA>};
const DotKernels kDotQ5_1 = {core::Type::kQ8_1, kMaxW, kMaxA,
                             tile_dispatch<BlockDot<OffsetDot<Q5Weights>>, kMaxW, kMaxA>};

}  // namespace strata::cpu::STRATA_KERNEL_NS
