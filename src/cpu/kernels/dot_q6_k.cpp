// q6_k weights with q8_k activations: weight = d * sc * (u - 32), u in [0, 63] (a nibble of ql
// and two bits of qh), 16 sub-blocks of 16 with int8 scales sc.
//
// Rounded as llama.cpp's ggml_vec_dot_q6_K_q8_K (x86 AVX2) rounds, see dot_k_order.h: eight
// lanes, lane m = sum over e % 32 in [4m, 4m + 4) of sc * (u - 32) * y, acc[m] = fma(d, lane,
// acc[m]), result sum8(acc). |lane| <= 32 * 128 * 32 * 127 < 2^24.
//
// This file holds the plain q8_k path (AVX2 and portable): what builds without AVX-512 run, and
// what the tile tests check. AVX-512 builds run mul_mat on the packed path, dot_packed_q6_k.cpp,
// which gives the same bits.

#include "core/blocks.h"
#include "core/float16.h"
#include "cpu/kernels/dot.h"
#include "cpu/kernels/dot_k_order.h"
#include "cpu/kernels/dot_tile.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

using core::BlockQ6_K;
using core::kQK_K;
using kquant::BlockQ8_K;

// Element 128 h + 32 k + l (half h, quarter k) has its nibble in ql[64 h + 32 (k % 2) + l]
// (high nibble for k >= 2) and its top bits at bits 2k of qh[32 h + l].
[[maybe_unused]] int q6_level(const BlockQ6_K& x, int e) {
  const int h = e / 128, k = e % 128 / 32, l = e % 32;
  const int nibble = (x.ql[64 * h + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0x0f;
  return nibble | (((x.qh[32 * h + l] >> (2 * k)) & 3) << 4);
}

struct Q6KDot {
  using Block = BlockQ6_K;

  struct State {
#if defined(STRATA_CPU_AVX2)
    __m256 acc;
#else
    float acc[8];
#endif
  };

#if defined(STRATA_CPU_AVX2)
  // ggml's way: (u * y) - (32 * y) in int16 pairs, then times the sub-block's scale.
  template <int NA>
  [[gnu::always_inline]] static void step(const Block& x, const BlockQ8_K* const (&y)[NA],
                                          State (&st)[NA]) {
    const __m128i scales = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.scales));
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    const __m256i top2 = _mm256_set1_epi8(0x30);
    const __m256i offset = _mm256_set1_epi8(32);
    __m256i isum[NA];
    for (int c = 0; c < NA; ++c) isum[c] = _mm256_setzero_si256();
    kquant::unroll<8>([&](auto g_c) [[gnu::always_inline]] {
      constexpr int kG = decltype(g_c)::value;
      constexpr int kH = kG / 4, kK = kG % 4;
      const __m256i ql = kquant::load256(x.ql + 64 * kH + 32 * (kK % 2));
      const __m256i qh = kquant::load256(x.qh + 32 * kH);
      const __m256i nibble = _mm256_and_si256(kK >= 2 ? _mm256_srli_epi16(ql, 4) : ql, low4);
      const __m256i u =
          _mm256_or_si256(nibble, _mm256_and_si256(simd::move_bit<2 * kK, 4>(qh), top2));
      const __m256i sc = kquant::pair_scales<kG>(scales);
      for (int c = 0; c < NA; ++c) {
        const __m256i yq = kquant::load256(y[c]->qs + 32 * kG);
        const __m256i p =
            _mm256_sub_epi16(_mm256_maddubs_epi16(u, yq), _mm256_maddubs_epi16(offset, yq));
        isum[c] = simd::madd_acc(isum[c], p, sc);
      }
    });
    const float d = simd::half_to_float(x.d);
    for (int c = 0; c < NA; ++c) {
      st[c].acc =
          _mm256_fmadd_ps(_mm256_set1_ps(y[c]->d * d), _mm256_cvtepi32_ps(isum[c]), st[c].acc);
    }
  }

  static float finish(const State& st) {
    return simd::hsum(st.acc);
  }
#else
  template <int NA>
  static void step(const Block& x, const BlockQ8_K* const (&y)[NA], State (&st)[NA]) {
    const float d = core::half_to_float(x.d);
    for (int c = 0; c < NA; ++c) {
      int32_t lane[8] = {};
      for (int e = 0; e < kQK_K; ++e) {
        lane[e % 32 / 4] += x.scales[e / 16] * (q6_level(x, e) - 32) * y[c]->qs[e];
      }
      kquant::fma_lanes(y[c]->d * d, lane, st[c].acc);
    }
  }

  static float finish(const State& st) {
    return kquant::sum8(st.acc);
  }
#endif
};

constexpr int kMaxW = 4;
constexpr int kMaxA = 4;

}  // namespace

const DotKernels kDotQ6_K = {core::Type::kQ8_K, kMaxW, kMaxA,
                             tile_dispatch<kquant::PairwiseDot<Q6KDot>, kMaxW, kMaxA>};

}  // namespace strata::cpu::STRATA_KERNEL_NS
