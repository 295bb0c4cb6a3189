// q3_k weights with q8_k activations: weight = d * sc * (u - 4), u in [0, 7] (two bits of qs,
// the third from hmask), 16 sub-blocks of 16 with 6-bit signed scales sc in [-32, 31].
//
// The offset is folded in with the activation sums: sum sc * dot(u - 4, y) =
// sum sc * dot(u, y) - 4 * sum sc * bsum; every int32 lane stays far below 2^31.
#include <cstring>

#include "core/blocks.h"
#include "core/float16.h"
#include "cpu/kernels/dot.h"
#include "cpu/kernels/dot_block.h"
#include "cpu/kernels/dot_k.h"
#include "cpu/kernels/dot_tile.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

using core::BlockQ3_K;
using core::kQK_K;
using kquant::BlockQ8_K;

// The 16 scales plus their bias of 32, four to a word (one per byte), from the 12 packed bytes:
// sub-block s keeps its low nibble in byte s % 8 (high half for s >= 8) and its top two bits at
// bits 2 (s / 4) of byte 8 + s % 4. Words rather than bytes, so the vector path can build its
// register without a store and a reload.
struct ScaleWords {
  uint32_t w[4];
};
ScaleWords biased_scales(const uint8_t packed[12]) {
  uint32_t a, b, c;
  std::memcpy(&a, packed, 4);
  std::memcpy(&b, packed + 4, 4);
  std::memcpy(&c, packed + 8, 4);
  constexpr uint32_t kLow = 0x0f0f0f0f, kTop = 0x30303030;
  return {{(a & kLow) | ((c << 4) & kTop), (b & kLow) | ((c << 2) & kTop),
           ((a >> 4) & kLow) | (c & kTop), ((b >> 4) & kLow) | ((c >> 2) & kTop)}};
}

struct Q3KDot : kquant::KDecoder {
  using Block = BlockQ3_K;

  static float scalar(const Block& x, const BlockQ8_K& y) {
    const ScaleWords words = biased_scales(x.scales);
    uint8_t biased[16];
    std::memcpy(biased, words.w, sizeof biased);
    int8_t scales[16];
    for (int s = 0; s < 16; ++s) scales[s] = static_cast<int8_t>(biased[s] - 32);
    uint8_t u[kQK_K];
    // Element 32 g + l (g = 4 chunk + k) has its low bits at bits 2k of qs[32 chunk + l] and its
    // third bit at bit g of hmask[l].
    for (int g = 0; g < 8; ++g) {
      for (int l = 0; l < 32; ++l) {
        const int low = (x.qs[32 * (g / 4) + l] >> (2 * (g % 4))) & 3;
        const int high = (x.hmask[l] >> g) & 1;
        u[32 * g + l] = static_cast<uint8_t>(low | (high << 2));
      }
    }
    const int32_t isum = kquant::scaled_dot16(scales, u, y) - 4 * kquant::scaled_bsums(scales, y);
    return static_cast<float>(isum) * (core::half_to_float(x.d) * y.d);
  }

#if defined(STRATA_CPU_AVX512)
  // Groups 2j and 2j + 1 of a chunk at once: the same 32 bytes of qs (bits 4j, and 4j + 2 in
  // the high half) and of hmask (bits g, and g + 1 in the high half); each high half is moved
  // down beforehand so both halves read the same bit positions.
  template <int NA>
  [[gnu::always_inline]] static void group_sums(const Block& x, __m128i scales,
                                                const Act (&act)[NA], __m256i (&isum)[NA]) {
    const __m512i hmask = simd::shift_high_half<1>(simd::broadcast256(kquant::load256(x.hmask)));
    const __m512i low2 = _mm512_set1_epi8(3);
    const __m512i bit2 = _mm512_set1_epi8(4);
    __m512i sums[NA];
    for (int c = 0; c < NA; ++c) sums[c] = _mm512_setzero_si512();
    kquant::unroll<2>([&](auto chunk_c) [[gnu::always_inline]] {
      constexpr int kChunk = decltype(chunk_c)::value;
      const __m512i qs =
          simd::shift_high_half<2>(simd::broadcast256(kquant::load256(x.qs + 32 * kChunk)));
      kquant::unroll<2>([&](auto j_c) [[gnu::always_inline]] {
        constexpr int kJ = decltype(j_c)::value;
        constexpr int kG = 4 * kChunk + 2 * kJ;
        const __m512i low = _mm512_and_si512(_mm512_srli_epi16(qs, 4 * kJ), low2);
        const __m512i high = _mm512_and_si512(simd::move_bit<kG, 2>(hmask), bit2);
        kquant::add_groups16<kG / 2>(_mm512_or_si512(low, high), scales, act, sums);
      });
    });
    for (int c = 0; c < NA; ++c) isum[c] = simd::add_halves(sums[c]);
  }
#elif defined(STRATA_CPU_AVX2)
  template <int NA>
  [[gnu::always_inline]] static void group_sums(const Block& x, __m128i scales,
                                                const Act (&act)[NA], __m256i (&isum)[NA]) {
    const __m256i hmask = kquant::load256(x.hmask);
    const __m256i low2 = _mm256_set1_epi8(3);
    const __m256i bit2 = _mm256_set1_epi8(4);
    for (int c = 0; c < NA; ++c) isum[c] = _mm256_setzero_si256();
    kquant::unroll<2>([&](auto chunk_c) [[gnu::always_inline]] {
      constexpr int kChunk = decltype(chunk_c)::value;
      const __m256i qs = kquant::load256(x.qs + 32 * kChunk);
      kquant::unroll<4>([&](auto k_c) [[gnu::always_inline]] {
        constexpr int kK = decltype(k_c)::value;
        constexpr int kG = 4 * kChunk + kK;
        const __m256i low = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * kK), low2);
        const __m256i high = _mm256_and_si256(simd::move_bit<kG, 2>(hmask), bit2);
        kquant::add_group16<kG>(_mm256_or_si256(low, high), scales, act, isum);
      });
    });
  }
#endif

#if defined(STRATA_CPU_AVX2)
  template <int NA>
  [[gnu::always_inline]] static void accumulate(const Block& x, const Act (&act)[NA],
                                                __m256 (&acc)[NA]) {
    const ScaleWords words = biased_scales(x.scales);
    const __m128i biased =
        _mm_set_epi32(static_cast<int32_t>(words.w[3]), static_cast<int32_t>(words.w[2]),
                      static_cast<int32_t>(words.w[1]), static_cast<int32_t>(words.w[0]));
    const __m128i scales = _mm_sub_epi8(biased, _mm_set1_epi8(32));
    __m256i isum[NA];
    group_sums<NA>(x, scales, act, isum);
    const __m256i scales16 = _mm256_cvtepi8_epi16(scales);
    const float d = simd::half_to_float(x.d);
    for (int c = 0; c < NA; ++c) {
      const __m256i offset = kquant::scaled_bsums(scales16, act[c].bsums);
      const __m256i total = _mm256_sub_epi32(isum[c], _mm256_slli_epi32(offset, 2));
      acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(d * act[c].d), _mm256_cvtepi32_ps(total), acc[c]);
    }
  }
#endif
};

constexpr int kMaxW = 4;
constexpr int kMaxA = 2;

}  // namespace

const DotKernels kDotQ3_K = {core::Type::kQ8_K, kMaxW, kMaxA,
                             tile_dispatch<BlockDot<Q3KDot>, kMaxW, kMaxA>};

}  // namespace strata::cpu::STRATA_KERNEL_NS
