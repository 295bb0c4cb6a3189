// Dot products of block-quantized weights with q8_0 activations: q8_0·q8_0 and q4_0·q8_0.
//
// Per block the integer dot product is exact (|sum| <= 32 * 128 * 127 < 2^24, so also exact as
// a float); it is scaled by d_w * d_a (exact in f32: two 11-bit mantissas) and accumulated in
// f32. The rounding error is therefore that of an f32 sum of k / 32 terms.
#include <cstring>

#include "core/blocks.h"
#include "core/float16.h"
#include "cpu/kernels/dot.h"
#include "cpu/kernels/dot_tile.h"
#include "cpu/kernels/simd.h"

namespace strata::cpu {
namespace {

using core::BlockQ4_0;
using core::BlockQ8_0;
using core::kQK8_0;

// Weight block decoders: the 32 quants of block b as int8 in element order, and its scale.
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

#if defined(STRATA_CPU_AVX2)
// Eight int32 partial sums of x·y for 32 signed bytes each. maddubs needs an unsigned left
// operand, so |x| is paired with y carrying x's sign; pair sums stay below 2 * 128 * 127, inside
// int16, because activations (core's q8_0 quantizer) never hold -128.
inline __m256i dot_i8(__m256i x, __m256i y) {
  const __m256i ax = _mm256_sign_epi8(x, x);
  const __m256i sy = _mm256_sign_epi8(y, x);
  return _mm256_madd_epi16(_mm256_maddubs_epi16(ax, sy), _mm256_set1_epi16(1));
}
#endif

template <class W>
struct QuantDot {
  template <int NW, int NA>
  static void run(int64_t k, const uint8_t* w, size_t ldw, const uint8_t* a, size_t lda, float* out,
                  int64_t ldo_w, int64_t ldo_a) {
    using WBlock = typename W::Block;
    const int64_t nblocks = k / kQK8_0;
    const auto wrow = [&](int r) { return reinterpret_cast<const WBlock*>(w + r * ldw); };
    const auto arow = [&](int c) { return reinterpret_cast<const BlockQ8_0*>(a + c * lda); };
#if defined(STRATA_CPU_AVX2)
    __m256 acc[NW][NA];
    for (int r = 0; r < NW; ++r) {
      for (int c = 0; c < NA; ++c) acc[r][c] = _mm256_setzero_ps();
    }
    for (int64_t b = 0; b < nblocks; ++b) {
      __m256i y[NA];
      float da[NA];
      for (int c = 0; c < NA; ++c) {
        y[c] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(arow(c)[b].qs));
        da[c] = simd::half_to_float(arow(c)[b].d);
      }
      for (int r = 0; r < NW; ++r) {
        const __m256i x = W::load(wrow(r)[b]);
        const float dw = simd::half_to_float(wrow(r)[b].d);
        for (int c = 0; c < NA; ++c) {
          const __m256 p = _mm256_cvtepi32_ps(dot_i8(x, y[c]));
          acc[r][c] = _mm256_fmadd_ps(_mm256_set1_ps(dw * da[c]), p, acc[r][c]);
        }
      }
    }
    for (int r = 0; r < NW; ++r) {
      for (int c = 0; c < NA; ++c) out[r * ldo_w + c * ldo_a] = simd::hsum(acc[r][c]);
    }
#else
    for (int r = 0; r < NW; ++r) {
      for (int c = 0; c < NA; ++c) {
        float sum = 0.0f;
        for (int64_t b = 0; b < nblocks; ++b) {
          int8_t q[kQK8_0];
          W::quants(wrow(r)[b], q);
          int32_t isum = 0;
          for (int j = 0; j < kQK8_0; ++j) isum += q[j] * arow(c)[b].qs[j];
          const float d = core::half_to_float(wrow(r)[b].d) * core::half_to_float(arow(c)[b].d);
          sum += static_cast<float>(isum) * d;
        }
        out[r * ldo_w + c * ldo_a] = sum;
      }
    }
#endif
  }
};

constexpr int kMaxW = 4;
constexpr int kMaxA = 2;

}  // namespace

const DotKernels kDotQ8_0 = {core::Type::kQ8_0, kMaxW, kMaxA,
                             tile_dispatch<QuantDot<Q8Weights>, kMaxW, kMaxA>};
const DotKernels kDotQ4_0 = {core::Type::kQ8_0, kMaxW, kMaxA,
                             tile_dispatch<QuantDot<Q4Weights>, kMaxW, kMaxA>};

}  // namespace strata::cpu
