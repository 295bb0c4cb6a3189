// q4_k and q5_k weights with q8_k activations: weight = d * sc * u - dmin * m, 8 sub-blocks of
// 32 with 6-bit sc and m; u in [0, 15] (q4_k: a nibble) or [0, 31] (q5_k: plus a bit of qh).
//
// Rounded as llama.cpp's ggml_vec_dot_q4_K_q8_K / _q5_K_q8_K (x86 AVX2) round, see
// dot_k_order.h: the scale part in eight lanes, lane m = sum over e % 32 in [4m, 4m + 4) of
// sc * u * y, acc[m] = fma(d, lane, acc[m]). The mins, with dmin = -y.d * dmin_w and
// S[s] = bsums[2s] + bsums[2s + 1] (the sum of y over sub-block s):
//   q4_k: four lanes P[i] = m[2i] S[2i] + m[2i + 1] S[2i + 1], accm[i] = fma(dmin, P[i], accm[i]),
//         result sum8(acc) + sum4(accm);
//   q5_k: one sum M = sum_s m[s] S[s], summ = fma(dmin, M, summ), result sum8(acc) + summ
//         (ggml writes summs += dmin * M, which its compilers contract to one fma).
// Lanes stay exact in int32: |lane| <= 32 * 63 * 31 * 127 < 2^23; maddubs pairs < 2^15.
//
// llama.cpp itself takes this path only when it does not repack: on AVX2 machines its CPU
// backend repacks q4_k matrices with a multiple of 8 rows (q4_K_8x8), whose kernels round per 64
// elements for the rows of full groups of four in a batch and per super-block for the others.
//
// This file holds the plain q8_k path (AVX2 and portable): what the scalar set runs and what the
// tile tests check. Every SIMD set runs mul_mat and mul_mat_id on the packed paths: for q5_k
// dot_packed_q5_k.cpp (AVX-512 VNNI) and dot_packed_q5_k_lanes8.cpp (the 256-bit sets), which give
// the same bits; for q4_k dot_packed_q4_k.cpp and its lanes8 twin, which keep one weight row per
// lane and sum in an order of their own.
#include <cstring>

#include "core/blocks.h"
#include "core/float16.h"
#include "cpu/kernels/dot.h"
#include "cpu/kernels/dot_k_order.h"
#include "cpu/kernels/dot_tile.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

using core::BlockQ4_K;
using core::BlockQ5_K;
using core::kQK_K;
using kquant::BlockQ8_K;

// The 6-bit scales (bytes 0..7) and mins (bytes 8..15) from the 12 packed bytes: sub-blocks 0-3
// keep theirs in the low 6 bits of bytes s and s + 4; sub-blocks 4-7 the low nibbles in byte
// s + 4 and the top two bits in the top bits of bytes s - 4 (scale) and s (min).
struct ScaleMin {
  uint8_t v[16];
};
ScaleMin scale_min(const uint8_t packed[12]) {
  uint32_t a, b, c;
  std::memcpy(&a, packed, 4);
  std::memcpy(&b, packed + 4, 4);
  std::memcpy(&c, packed + 8, 4);
  constexpr uint32_t kLow6 = 0x3f3f3f3f, kLow4 = 0x0f0f0f0f, kTop = 0x30303030;
  const uint32_t w[4] = {a & kLow6, (c & kLow4) | ((a >> 2) & kTop), b & kLow6,
                         ((c >> 4) & kLow4) | ((b >> 2) & kTop)};
  ScaleMin sm;
  std::memcpy(sm.v, w, sizeof w);
  return sm;
}

// The 4-bit part of the levels: element 64 j + l in the low nibble of qs[32 j + l], element
// 64 j + 32 + l in its high nibble.
struct Q4KLevels {
  using Block = BlockQ4_K;
  static constexpr bool kFifth = false;
  static int fifth_bit(const Block&, int) { return 0; }
};

// q5_k adds 16 to element 32 s + l (sub-block s) where bit s of qh[l] is set.
struct Q5KLevels {
  using Block = BlockQ5_K;
  static constexpr bool kFifth = true;
  static int fifth_bit(const Block& b, int e) { return ((b.qh[e % 32] >> (e / 32)) & 1) << 4; }
};

template <class L>
struct ScaleMinDot {
  using Block = typename L::Block;

  // One output's accumulators: the scale lanes and the mins (q5_k uses mins[0] only).
  struct State {
#if defined(STRATA_CPU_AVX2)
    __m256 acc;
    __m128 mins;
#else
    float acc[8];
    float mins[4];
#endif
  };

  static float finish_mins(const float* m) {
    return L::kFifth ? m[0] : kquant::sum4(m);
  }

#if defined(STRATA_CPU_AVX2)
  template <int NA>
  [[gnu::always_inline]] static void step(const Block& x, const BlockQ8_K* const (&y)[NA],
                                          State (&st)[NA]) {
    const ScaleMin sm = scale_min(x.scales);
    const __m256i sm16 =
        _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sm.v)));
    const __m256i scales = _mm256_permute2x128_si256(sm16, sm16, 0x00);
    const __m128i mins = _mm256_extracti128_si256(sm16, 1);
    __m256i high = _mm256_setzero_si256();
    if constexpr (L::kFifth) high = kquant::load256(x.qh);
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    __m256i isum[NA];
    for (int c = 0; c < NA; ++c) isum[c] = _mm256_setzero_si256();
    kquant::unroll<8>([&](auto sub_c) [[gnu::always_inline]] {
      constexpr int kSub = decltype(sub_c)::value;
      const __m256i qs = kquant::load256(x.qs + 32 * (kSub / 2));
      __m256i u = _mm256_and_si256(kSub % 2 ? _mm256_srli_epi16(qs, 4) : qs, low4);
      if constexpr (L::kFifth) {
        u = _mm256_or_si256(
            u, _mm256_and_si256(simd::move_bit<kSub, 4>(high), _mm256_set1_epi8(0x10)));
      }
      const __m256i sc = _mm256_shuffle_epi8(scales, _mm256_set1_epi16(0x0100 + 0x0202 * kSub));
      for (int c = 0; c < NA; ++c) {
        const __m256i yq = kquant::load256(y[c]->qs + 32 * kSub);
        isum[c] = simd::madd_acc(isum[c], simd::pairs_u8_i8(u, yq), sc);
      }
    });
    const float d = simd::half_to_float(x.d);
    const float dmin = simd::half_to_float(x.dmin);
    for (int c = 0; c < NA; ++c) {
      const __m128i s =
          _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(y[c]->bsums)),
                         _mm_loadu_si128(reinterpret_cast<const __m128i*>(y[c]->bsums + 8)));
      __m128i p = _mm_madd_epi16(mins, s);
      if constexpr (L::kFifth) p = _mm_hadd_epi32(_mm_hadd_epi32(p, p), p);
      st[c].acc =
          _mm256_fmadd_ps(_mm256_set1_ps(y[c]->d * d), _mm256_cvtepi32_ps(isum[c]), st[c].acc);
      st[c].mins = _mm_fmadd_ps(_mm_set1_ps(-y[c]->d * dmin), _mm_cvtepi32_ps(p), st[c].mins);
    }
  }

  static float finish(const State& st) {
    float m[4];
    _mm_storeu_ps(m, st.mins);
    return simd::hsum(st.acc) + finish_mins(m);
  }
#else
  template <int NA>
  static void step(const Block& x, const BlockQ8_K* const (&y)[NA], State (&st)[NA]) {
    const ScaleMin sm = scale_min(x.scales);
    const float d = core::half_to_float(x.d);
    const float dmin = core::half_to_float(x.dmin);
    for (int c = 0; c < NA; ++c) {
      int32_t lane[8] = {};
      for (int e = 0; e < kQK_K; ++e) {
        const int s = e / 32;
        const int nibble = (x.qs[32 * (s / 2) + e % 32] >> (4 * (s % 2))) & 0x0f;
        lane[e % 32 / 4] += sm.v[s] * (nibble | L::fifth_bit(x, e)) * y[c]->qs[e];
      }
      int32_t p[4];
      for (int i = 0; i < 4; ++i) {
        const int16_t* b = y[c]->bsums + 4 * i;
        p[i] = sm.v[8 + 2 * i] * (b[0] + b[1]) + sm.v[9 + 2 * i] * (b[2] + b[3]);
      }
      kquant::fma_lanes(y[c]->d * d, lane, st[c].acc);
      const float neg_dmin = -y[c]->d * dmin;
      if constexpr (L::kFifth) {
        st[c].mins[0] =
            std::fma(neg_dmin, static_cast<float>(p[0] + p[1] + p[2] + p[3]), st[c].mins[0]);
      } else {
        for (int i = 0; i < 4; ++i)
          st[c].mins[i] = std::fma(neg_dmin, static_cast<float>(p[i]), st[c].mins[i]);
      }
    }
  }

  static float finish(const State& st) {
    return kquant::sum8(st.acc) + finish_mins(st.mins);
  }
#endif
};

constexpr int kMaxW = 4;
constexpr int kMaxA = 4;

}  // namespace

const DotKernels kDotQ4_K = {
    core::Type::kQ8_K, kMaxW, kMaxA,
    tile_dispatch<kquant::PairwiseDot<ScaleMinDot<Q4KLevels>>, kMaxW, kMaxA>};
const DotKernels kDotQ5_K = {
    core::Type::kQ8_K, kMaxW, kMaxA,
    tile_dispatch<kquant::PairwiseDot<ScaleMinDot<Q5KLevels>>, kMaxW, kMaxA>};

}  // namespace strata::cpu::STRATA_KERNEL_NS
