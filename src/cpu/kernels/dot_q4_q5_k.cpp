// q4_k and q5_k weights with q8_k activations: weight = d * sc * u - dmin * m, 8 sub-blocks of
// 32 with 6-bit sc and m; u in [0, 15] (q4_k: a nibble) or [0, 31] (q5_k: plus a bit of qh).
//
// Per super-block: d * d_a * sum sc * dot(u, y) - dmin * d_a * sum m * bsum, both integer sums
// exact in int32 lanes (|dot| per sub-block <= 32 * 31 * 127 < 2^17, times 63, times 8 < 2^26;
// maddubs pairs <= 2 * 31 * 127 < 2^15).
#include <cstring>

#include "core/blocks.h"
#include "core/float16.h"
#include "cpu/kernels/dot.h"
#include "cpu/kernels/dot_block.h"
#include "cpu/kernels/dot_k.h"
#include "cpu/kernels/dot_tile.h"

namespace strata::cpu {
namespace {

using core::BlockQ4_K;
using core::BlockQ5_K;
using core::kQK_K;
using kquant::BlockQ8_K;

// The 6-bit scales (bytes 0..7) and mins (bytes 8..15), four to a word, from the 12 packed
// bytes: sub-blocks 0-3 keep theirs in the low 6 bits of bytes s and s + 4; sub-blocks 4-7 the
// low nibbles in byte s + 4 and the top two bits in the top bits of bytes s - 4 (scale) and s
// (min). Words rather than bytes, so the vector path can build its register without a store
// and a reload.
struct ScaleMinWords {
  uint32_t w[4];
};
ScaleMinWords scale_min_words(const uint8_t packed[12]) {
  uint32_t a, b, c;
  std::memcpy(&a, packed, 4);
  std::memcpy(&b, packed + 4, 4);
  std::memcpy(&c, packed + 8, 4);
  constexpr uint32_t kLow6 = 0x3f3f3f3f, kLow4 = 0x0f0f0f0f, kTop = 0x30303030;
  return {{a & kLow6, (c & kLow4) | ((a >> 2) & kTop), b & kLow6,
           ((c >> 4) & kLow4) | ((b >> 2) & kTop)}};
}

// The 4-bit part of the levels, element 64 j + l in the low nibble of qs[32 j + l] and
// element 64 j + 32 + l in its high nibble.
struct Q4KLevels {
  using Block = BlockQ4_K;
  static int fifth_bit(const Block&, int) { return 0; }
#if defined(STRATA_CPU_AVX512)
  static __m512i high_bits(const Block&) {
    return _mm512_setzero_si512();
  }
  template <int J>
  static __m512i add_high(__m512i u, __m512i) {
    return u;
  }
#elif defined(STRATA_CPU_AVX2)
  static __m256i high_bits(const Block&) {
    return _mm256_setzero_si256();
  }
  template <int Sub>
  static __m256i add_high(__m256i u, __m256i) {
    return u;
  }
#endif
};

// q5_k adds bit 16 of element 32 s + l (sub-block s) at bit s of qh[l].
struct Q5KLevels {
  using Block = BlockQ5_K;
  static int fifth_bit(const Block& b, int e) { return ((b.qh[e % 32] >> (e / 32)) & 1) << 4; }
#if defined(STRATA_CPU_AVX512)
  // Sub-blocks 2j (low half) and 2j + 1 (high half, its bits moved down by one beforehand).
  static __m512i high_bits(const Block& b) {
    return simd::shift_high_half<1>(simd::broadcast256(kquant::load256(b.qh)));
  }
  template <int J>
  static __m512i add_high(__m512i u, __m512i qh) {
    const __m512i bit = _mm512_and_si512(simd::move_bit<2 * J, 4>(qh), _mm512_set1_epi8(0x10));
    return _mm512_or_si512(u, bit);
  }
#elif defined(STRATA_CPU_AVX2)
  static __m256i high_bits(const Block& b) {
    return kquant::load256(b.qh);
  }
  template <int Sub>
  static __m256i add_high(__m256i u, __m256i qh) {
    const __m256i bit = _mm256_and_si256(simd::move_bit<Sub, 4>(qh), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(u, bit);
  }
#endif
};

template <class L>
struct ScaleMinDot : kquant::KDecoder {
  using Block = typename L::Block;

  static float scalar(const Block& x, const BlockQ8_K& y) {
    const ScaleMinWords words = scale_min_words(x.scales);
    uint8_t sm[16];
    std::memcpy(sm, words.w, sizeof sm);
    int32_t isum = 0, imin = 0;
    for (int s = 0; s < 8; ++s) {
      int32_t dot = 0;
      for (int l = 0; l < 32; ++l) {
        const int e = 32 * s + l;
        const int nibble = (x.qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 0x0f;
        dot += (nibble | L::fifth_bit(x, e)) * y.qs[e];
      }
      isum += sm[s] * dot;
      imin += sm[8 + s] * (y.bsums[2 * s] + y.bsums[2 * s + 1]);
    }
    return static_cast<float>(isum) * (core::half_to_float(x.d) * y.d) -
           static_cast<float>(imin) * (core::half_to_float(x.dmin) * y.d);
  }

#if defined(STRATA_CPU_AVX512)
  // Sub-blocks 2j and 2j + 1 at once: the low and the high nibbles of the same 32 bytes.
  template <int NA>
  [[gnu::always_inline]] static void scaled_sums(const Block& x, __m128i scales8,
                                                 const Act (&act)[NA], __m256i (&isum)[NA]) {
    const __m512i scales = _mm512_maskz_broadcast_i32x4(0xffff, scales8);
    const __m512i high = L::high_bits(x);
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    __m512i sums[NA];
    for (int c = 0; c < NA; ++c) sums[c] = _mm512_setzero_si512();
    kquant::unroll<4>([&](auto j_c) [[gnu::always_inline]] {
      constexpr int kJ = decltype(j_c)::value;
      const __m512i qs = simd::broadcast256(kquant::load256(x.qs + 32 * kJ));
      const __m512i nibbles = _mm512_and_si512(simd::shift_high_half<4>(qs), low4);
      const __m512i u = L::template add_high<kJ>(nibbles, high);
      // Scale 2j in the low half's int16 lanes, 2j + 1 in the high half's.
      constexpr int64_t kLo = 0x0001000100010001ll * (0x0100 + 0x0202 * 2 * kJ);
      constexpr int64_t kHi = 0x0001000100010001ll * (0x0100 + 0x0202 * (2 * kJ + 1));
      const __m512i sc =
          _mm512_shuffle_epi8(scales, _mm512_set_epi64(kHi, kHi, kHi, kHi, kLo, kLo, kLo, kLo));
      for (int c = 0; c < NA; ++c) {
        const __m512i y = kquant::load512(act[c].q + 64 * kJ);
        sums[c] = simd::madd_acc(sums[c], simd::pairs_u8_i8(u, y), sc);
      }
    });
    for (int c = 0; c < NA; ++c) isum[c] = simd::add_halves(sums[c]);
  }
#elif defined(STRATA_CPU_AVX2)
  template <int NA>
  [[gnu::always_inline]] static void scaled_sums(const Block& x, __m128i scales8,
                                                 const Act (&act)[NA], __m256i (&isum)[NA]) {
    const __m256i scales = _mm256_broadcastsi128_si256(scales8);
    const __m256i high = L::high_bits(x);
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    for (int c = 0; c < NA; ++c) isum[c] = _mm256_setzero_si256();
    kquant::unroll<8>([&](auto sub_c) [[gnu::always_inline]] {
      constexpr int kSub = decltype(sub_c)::value;
      const __m256i qs = kquant::load256(x.qs + 32 * (kSub / 2));
      const __m256i nibbles = _mm256_and_si256(kSub % 2 ? _mm256_srli_epi16(qs, 4) : qs, low4);
      const __m256i u = L::template add_high<kSub>(nibbles, high);
      const __m256i sc = _mm256_shuffle_epi8(scales, _mm256_set1_epi16(0x0100 + 0x0202 * kSub));
      for (int c = 0; c < NA; ++c) {
        const __m256i y = kquant::load256(act[c].q + 32 * kSub);
        isum[c] = simd::madd_acc(isum[c], simd::pairs_u8_i8(u, y), sc);
      }
    });
  }
#endif

#if defined(STRATA_CPU_AVX2)
  template <int NA>
  [[gnu::always_inline]] static void accumulate(const Block& x, const Act (&act)[NA],
                                                __m256 (&acc)[NA]) {
    const ScaleMinWords words = scale_min_words(x.scales);
    const __m128i packed =
        _mm_set_epi32(static_cast<int32_t>(words.w[3]), static_cast<int32_t>(words.w[2]),
                      static_cast<int32_t>(words.w[1]), static_cast<int32_t>(words.w[0]));
    __m256i isum[NA];
    scaled_sums<NA>(x, _mm_cvtepu8_epi16(packed), act, isum);
    // Each min twice, so one madd against the 16 bsums weights both halves of its sub-block.
    const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(packed, packed));
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
constexpr int kMaxA = 4;

}  // namespace

const DotKernels kDotQ4_K = {core::Type::kQ8_K, kMaxW, kMaxA,
                             tile_dispatch<BlockDot<ScaleMinDot<Q4KLevels>>, kMaxW, kMaxA>};
const DotKernels kDotQ5_K = {core::Type::kQ8_K, kMaxW, kMaxA,
                             tile_dispatch<BlockDot<ScaleMinDot<Q5KLevels>>, kMaxW, kMaxA>};

}  // namespace strata::cpu
