// q6_k weights with q8_k activations: weight = d * sc * (u - 32), u in [0, 63] (a nibble of
// ql and two bits of qh), 16 sub-blocks of 16 with int8 scales sc.
//
// The offset is folded in with the activation sums: sum sc * dot(u - 32, y) =
// sum sc * dot(u, y) - 32 * sum sc * bsum. Bounds: |dot(u, y)| per 16 < 2^17, times |sc| <= 128,
// times 16 sub-blocks < 2^28, so every int32 lane is exact; pairs in maddubs stay below
// 2 * 63 * 127 < 2^15.
#include "core/blocks.h"
#include "core/float16.h"
#include "cpu/kernels/dot.h"
#include "cpu/kernels/dot_block.h"
#include "cpu/kernels/dot_k.h"
#include "cpu/kernels/dot_tile.h"

namespace strata::cpu {
namespace {

using core::BlockQ6_K;
using core::kQK_K;
using kquant::BlockQ8_K;

struct Q6KDot : kquant::KDecoder {
  using Block = BlockQ6_K;

  static float scalar(const Block& x, const BlockQ8_K& y) {
    uint8_t u[kQK_K];
    // Per 128 elements: element 32k + l has its nibble in ql[l + 32 (k % 2)] (high half for
    // k >= 2) and its top bits at bits 2k of qh[l].
    for (int chunk = 0; chunk < 2; ++chunk) {
      const uint8_t* ql = x.ql + 64 * chunk;
      const uint8_t* qh = x.qh + 32 * chunk;
      for (int k = 0; k < 4; ++k) {
        for (int l = 0; l < 32; ++l) {
          const int nibble = (ql[l + 32 * (k % 2)] >> (4 * (k / 2))) & 0x0f;
          const int top = (qh[l] >> (2 * k)) & 3;
          u[128 * chunk + 32 * k + l] = static_cast<uint8_t>(nibble | (top << 4));
        }
      }
    }
    const int32_t isum =
        kquant::scaled_dot16(x.scales, u, y) - 32 * kquant::scaled_bsums(x.scales, y);
    return static_cast<float>(isum) * (core::half_to_float(x.d) * y.d);
  }

#if defined(STRATA_CPU_AVX512)
  // Groups 2j and 2j + 1 of a chunk at once: their nibbles are the low (j = 0) or high (j = 1)
  // nibbles of the chunk's 64 bytes of ql (the first 32 for group 2j, the next for 2j + 1),
  // their top bits bits 4j and 4j + 2 of qh.
  template <int NA>
  [[gnu::always_inline]] static void group_sums(const Block& x, __m128i scales,
                                                const Act (&act)[NA], __m256i (&isum)[NA]) {
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const __m512i top2 = _mm512_set1_epi8(0x30);
    __m512i sums[NA];
    for (int c = 0; c < NA; ++c) sums[c] = _mm512_setzero_si512();
    kquant::unroll<2>([&](auto chunk_c) [[gnu::always_inline]] {
      constexpr int kChunk = decltype(chunk_c)::value;
      const __m512i ql = kquant::load512(x.ql + 64 * kChunk);
      // The high half's top bits moved down by 2, so both halves find theirs at bits 4j.
      const __m512i qh =
          simd::shift_high_half<2>(simd::broadcast256(kquant::load256(x.qh + 32 * kChunk)));
      kquant::unroll<2>([&](auto j_c) [[gnu::always_inline]] {
        constexpr int kJ = decltype(j_c)::value;
        const __m512i nibbles = _mm512_and_si512(kJ ? _mm512_srli_epi16(ql, 4) : ql, low4);
        const __m512i top = _mm512_and_si512(simd::move_bit<4 * kJ, 4>(qh), top2);
        kquant::add_groups16<2 * kChunk + kJ>(_mm512_or_si512(nibbles, top), scales, act, sums);
      });
    });
    for (int c = 0; c < NA; ++c) isum[c] = simd::add_halves(sums[c]);
  }
#elif defined(STRATA_CPU_AVX2)
  template <int NA>
  [[gnu::always_inline]] static void group_sums(const Block& x, __m128i scales,
                                                const Act (&act)[NA], __m256i (&isum)[NA]) {
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    const __m256i top2 = _mm256_set1_epi8(0x30);
    for (int c = 0; c < NA; ++c) isum[c] = _mm256_setzero_si256();
    kquant::unroll<2>([&](auto chunk_c) [[gnu::always_inline]] {
      constexpr int kChunk = decltype(chunk_c)::value;
      const __m256i ql0 = kquant::load256(x.ql + 64 * kChunk);
      const __m256i ql1 = kquant::load256(x.ql + 64 * kChunk + 32);
      const __m256i qh = kquant::load256(x.qh + 32 * kChunk);
      const __m256i nibbles[4] = {_mm256_and_si256(ql0, low4), _mm256_and_si256(ql1, low4),
                                  _mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                                  _mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4)};
      kquant::unroll<4>([&](auto k_c) [[gnu::always_inline]] {
        constexpr int kK = decltype(k_c)::value;
        const __m256i top = _mm256_and_si256(simd::move_bit<2 * kK, 4>(qh), top2);
        const __m256i u = _mm256_or_si256(nibbles[kK], top);
        kquant::add_group16<4 * kChunk + kK>(u, scales, act, isum);
      });
    });
  }
#endif

#if defined(STRATA_CPU_AVX2)
  template <int NA>
  [[gnu::always_inline]] static void accumulate(const Block& x, const Act (&act)[NA],
                                                __m256 (&acc)[NA]) {
    const __m128i scales = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.scales));
    __m256i isum[NA];
    group_sums<NA>(x, scales, act, isum);
    const __m256i scales16 = _mm256_cvtepi8_epi16(scales);
    const float d = simd::half_to_float(x.d);
    for (int c = 0; c < NA; ++c) {
      const __m256i offset = kquant::scaled_bsums(scales16, act[c].bsums);
      const __m256i total = _mm256_sub_epi32(isum[c], _mm256_slli_epi32(offset, 5));
      acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(d * act[c].d), _mm256_cvtepi32_ps(total), acc[c]);
    }
  }
#endif
};

constexpr int kMaxW = 4;
constexpr int kMaxA = 4;

}  // namespace

const DotKernels kDotQ6_K = {core::Type::kQ8_K, kMaxW, kMaxA,
                             tile_dispatch<BlockDot<Q6KDot>, kMaxW, kMaxA>};

}  // namespace strata::cpu
