// q2_k weights with q8_k activations: weight = d * sc * u - dmin * m, u in [0, 3], 16
// sub-blocks of 16 with 4-bit sc (low nibble of scales[sub]) and m (high nibble).
//
// Per super-block: d * d_a * sum sc * dot(u, y) - dmin * d_a * sum m * bsum, both integer sums
// exact in int32 lanes.
#include "core/blocks.h"
#include "core/float16.h"
#include "cpu/kernels/dot.h"
#include "cpu/kernels/dot_block.h"
#include "cpu/kernels/dot_k.h"
#include "cpu/kernels/dot_tile.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

using core::BlockQ2_K;
using core::kQK_K;
using kquant::BlockQ8_K;

struct Q2KDot : kquant::KDecoder {
  using Block = BlockQ2_K;

  static float scalar(const Block& x, const BlockQ8_K& y) {
    int8_t scales[16], mins[16];
    for (int s = 0; s < 16; ++s) {
      scales[s] = static_cast<int8_t>(x.scales[s] & 0x0f);
      mins[s] = static_cast<int8_t>(x.scales[s] >> 4);
    }
    uint8_t u[kQK_K];
    // Element 32 g + l (g = 4 chunk + k) sits at bits 2k of qs[32 chunk + l].
    for (int g = 0; g < 8; ++g) {
      for (int l = 0; l < 32; ++l) {
        u[32 * g + l] = static_cast<uint8_t>((x.qs[32 * (g / 4) + l] >> (2 * (g % 4))) & 3);
      }
    }
    const float da = y.d;
    return static_cast<float>(kquant::scaled_dot16(scales, u, y)) *
               (core::half_to_float(x.d) * da) -
           static_cast<float>(kquant::scaled_bsums(mins, y)) * (core::half_to_float(x.dmin) * da);
  }

#if defined(STRATA_CPU_AVX512)
  // Groups 2j and 2j + 1 of a chunk at once: bits 4j and (high half) 4j + 2 of the same 32
  // bytes, the high half moved down by 2 beforehand so both read bits 4j.
  template <int NA>
  [[gnu::always_inline]] static void group_sums(const Block& x, __m128i scales,
                                                const Act (&act)[NA], __m256i (&isum)[NA]) {
    const __m512i low2 = _mm512_set1_epi8(3);
    __m512i sums[NA];
    for (int c = 0; c < NA; ++c) sums[c] = _mm512_setzero_si512();
    kquant::unroll<2>([&](auto chunk_c) [[gnu::always_inline]] {
      constexpr int kChunk = decltype(chunk_c)::value;
      const __m512i qs =
          simd::shift_high_half<2>(simd::broadcast256(kquant::load256(x.qs + 32 * kChunk)));
      kquant::unroll<2>([&](auto j_c) [[gnu::always_inline]] {
        constexpr int kJ = decltype(j_c)::value;
        const __m512i u = _mm512_and_si512(_mm512_srli_epi16(qs, 4 * kJ), low2);
        kquant::add_groups16<2 * kChunk + kJ>(u, scales, act, sums);
      });
    });
    for (int c = 0; c < NA; ++c) isum[c] = simd::add_halves(sums[c]);
  }
#elif defined(STRATA_CPU_AVX2)
  template <int NA>
  [[gnu::always_inline]] static void group_sums(const Block& x, __m128i scales,
                                                const Act (&act)[NA], __m256i (&isum)[NA]) {
    const __m256i low2 = _mm256_set1_epi8(3);
    for (int c = 0; c < NA; ++c) isum[c] = _mm256_setzero_si256();
    kquant::unroll<2>([&](auto chunk_c) [[gnu::always_inline]] {
      constexpr int kChunk = decltype(chunk_c)::value;
      const __m256i qs = kquant::load256(x.qs + 32 * kChunk);
      kquant::unroll<4>([&](auto k_c) [[gnu::always_inline]] {
        constexpr int kK = decltype(k_c)::value;
        const __m256i u = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * kK), low2);
        kquant::add_group16<4 * kChunk + kK>(u, scales, act, isum);
      });
    });
  }
#endif

#if defined(STRATA_CPU_AVX2)
  template <int NA>
  [[gnu::always_inline]] static void accumulate(const Block& x, const Act (&act)[NA],
                                                __m256 (&acc)[NA]) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.scales));
    const __m128i low4 = _mm_set1_epi8(0x0f);
    __m256i isum[NA];
    group_sums<NA>(x, _mm_and_si128(packed, low4), act, isum);
    const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), low4));
    const float d = simd::half_to_float(x.d);
    const float dmin = simd::half_to_float(x.dmin);
    for (int c = 0; c < NA; ++c) {
      const __m256 m = _mm256_cvtepi32_ps(kquant::scaled_bsums(mins16, act[c].bsums));
      acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(d * act[c].d), _mm256_cvtepi32_ps(isum[c]), acc[c]);
      acc[c] = _mm256_fnmadd_ps(_mm256_set1_ps(dmin * act[c].d), m, acc[c]);
    }
  }
#endif
};

constexpr int kMaxW = 4;
constexpr int kMaxA = 2;

}  // namespace

const DotKernels kDotQ2_K = {core::Type::kQ8_K, kMaxW, kMaxA,
                             tile_dispatch<BlockDot<Q2KDot>, kMaxW, kMaxA>};

}  // namespace strata::cpu::STRATA_KERNEL_NS
