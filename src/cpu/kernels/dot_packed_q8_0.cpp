// Packed AVX-512 VNNI kernel for q8_0 weights with q8_0 activations, in llama.cpp's order.
//
// llama.cpp (x86) sums a q8_0 dot product in eight f32 lanes: per block, lane j takes the exact
// integer sum of elements 4j..4j+3 and adds it times d_w * d_a with one fused multiply-add,
// blocks in order; the eight lanes are summed at the end (simd::hsum). Matching that order is
// what keeps our logits equal to its own (a last-bit difference flips later int8 roundings).
//
// Two activation rows share a 512-bit register: the weight block's 32 bytes are broadcast to
// both halves and the two rows' blocks sit in the low and high halves, so one vpdpbusd yields
// both rows' eight lanes for that block, and one multiply-add updates both rows' accumulators.
// vpdpbusd wants unsigned weights: u = q ^ 0x80 = q + 128, and each packed activation block
// carries -128 * (sum of each lane's four activations) as the lanes' initial value.
#include <cstring>

#include "core/blocks.h"
#include "core/float16.h"
#include "cpu/kernels/dot_packed.h"
#include "cpu/kernels/dot_tile.h"
#include "cpu/kernels/quantize_act.h"
#include "cpu/kernels/simd_int.h"

namespace strata::cpu {
namespace {

using core::BlockQ8_0;
using core::kQK8_0;

#if defined(STRATA_CPU_AVX512)

/// One activation block as the kernel reads it (96 bytes: a row of even length in blocks is
/// a multiple of 64 bytes).
struct alignas(32) LaneBlock {
  int8_t qs[32];
  int32_t corr[8];  ///< -128 * (sum of activations 4j..4j+3)
  float d[8];       ///< the block scale, once per lane
};
static_assert(sizeof(LaneBlock) == 96);

constexpr int64_t kGroup = 2 * kQK8_0;

size_t act_row_bytes(int64_t k) {
  return static_cast<size_t>(k / kQK8_0) * sizeof(LaneBlock);
}

void pack(const float* src, uint8_t* dst, int64_t k) {
  auto* out = reinterpret_cast<LaneBlock*>(dst);
  const __m256i ones = _mm256_set1_epi8(1);
  for (int64_t i = 0; i < k / kQK8_0; ++i, src += kQK8_0, ++out) {
    BlockQ8_0 b;
    quantize_q8_0(src, &b, kQK8_0);
    std::memcpy(out->qs, b.qs, sizeof out->qs);
    const __m256i q = _mm256_load_si256(reinterpret_cast<const __m256i*>(out->qs));
    const __m256i sums = _mm256_dpbusd_epi32(_mm256_setzero_si256(), ones, q);
    _mm256_store_si256(reinterpret_cast<__m256i*>(out->corr),
                       _mm256_mullo_epi32(sums, _mm256_set1_epi32(-128)));
    _mm256_store_ps(out->d, _mm256_set1_ps(core::half_to_float(b.d)));
  }
}

inline __m512i pair_i(const void* lo, const void* hi) {
  const __m256i a = _mm256_load_si256(static_cast<const __m256i*>(lo));
  const __m256i b = _mm256_load_si256(static_cast<const __m256i*>(hi));
  // Zero-masked forms: GCC 12 flags the unmasked ones as maybe-uninitialized.
  return _mm512_maskz_inserti64x4(0xff, simd::broadcast256(a), b, 1);
}

inline __m512 pair_f(const float* lo, const float* hi) {
  return _mm512_castsi512_ps(pair_i(lo, hi));
}

// Bytes ahead of the block being read, per weight row (as the other decode kernels).
constexpr size_t kPrefetch = 1536;

// The weight block's levels as unsigned bytes (q + 128) and its scale's bits.
struct WeightBlock {
  __m256i u;
  __m128i dbits;  ///< the f16 scale in all eight words
};

[[gnu::always_inline]] inline WeightBlock load_weight(const uint8_t* row, int64_t b) {
  const auto* blk = reinterpret_cast<const BlockQ8_0*>(row) + b;
  // Each weight row is its own stream; prefetching ahead keeps enough lines in flight for
  // decode to read the rows at memory speed. Two blocks span 68 bytes: two prefetches every
  // other block reach every line.
  if (b % 2 == 0) {
    _mm_prefetch(reinterpret_cast<const char*>(blk) + kPrefetch, _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(blk) + kPrefetch + 64, _MM_HINT_T0);
  }
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  return {_mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->qs)), flip),
          _mm_set1_epi16(static_cast<int16_t>(blk->d.bits))};
}

inline float hsum_half(__m512 v, int half) {
  return simd::hsum(half == 0 ? _mm512_maskz_extractf32x8_ps(0xff, v, 0)
                              : _mm512_maskz_extractf32x8_ps(0xff, v, 1));
}

struct LaneDot {
  template <int NW, int NA>
  static void run(int64_t k, const uint8_t* w, size_t ldw, const uint8_t* a, size_t lda, float* out,
                  int64_t ldo_w, int64_t ldo_a) {
    if constexpr (NA >= 2) pairs_of_act_rows<NW, NA / 2>(k, w, ldw, a, lda, out, ldo_w, ldo_a);
    if constexpr (NA % 2 == 1) {
      const int c = NA - 1;
      lone_act_row<NW>(k, w, ldw, a + c * lda, out + c * ldo_a, ldo_w);
    }
  }

  // Two activation rows per register, every weight row against each pair (prefill).
  template <int NW, int kPairs>
  static void pairs_of_act_rows(int64_t k, const uint8_t* w, size_t ldw, const uint8_t* a,
                                size_t lda, float* out, int64_t ldo_w, int64_t ldo_a) {
    const int64_t blocks = k / kQK8_0;
    __m512 acc[NW][kPairs];
    for (int r = 0; r < NW; ++r) {
      for (int p = 0; p < kPairs; ++p) acc[r][p] = _mm512_setzero_ps();
    }
    for (int64_t b = 0; b < blocks; ++b) {
      __m512i aq[kPairs], ac[kPairs];
      __m512 ad[kPairs];
      for (int p = 0; p < kPairs; ++p) {
        const LaneBlock* x = reinterpret_cast<const LaneBlock*>(a + 2 * p * lda) + b;
        const LaneBlock* y = reinterpret_cast<const LaneBlock*>(a + (2 * p + 1) * lda) + b;
        aq[p] = pair_i(x->qs, y->qs);
        ac[p] = pair_i(x->corr, y->corr);
        ad[p] = pair_f(x->d, y->d);
      }
      for (int r = 0; r < NW; ++r) {
        const WeightBlock wb = load_weight(w + r * ldw, b);
        const __m512i uu = simd::broadcast256(wb.u);
        const __m512 vdw = _mm512_maskz_cvtph_ps(0xffff, _mm256_broadcastsi128_si256(wb.dbits));
        for (int p = 0; p < kPairs; ++p) {
          const __m512i i = _mm512_dpbusd_epi32(ac[p], uu, aq[p]);
          const __m512 s = _mm512_mul_ps(vdw, ad[p]);
          acc[r][p] = _mm512_fmadd_ps(s, _mm512_maskz_cvtepi32_ps(0xffff, i), acc[r][p]);
        }
      }
    }
    for (int r = 0; r < NW; ++r) {
      for (int p = 0; p < kPairs; ++p) {
        out[r * ldo_w + 2 * p * ldo_a] = hsum_half(acc[r][p], 0);
        out[r * ldo_w + (2 * p + 1) * ldo_a] = hsum_half(acc[r][p], 1);
      }
    }
  }

  // One activation row: two weight rows per register instead (decode), an odd last weight row
  // in 256-bit registers.
  template <int NW>
  static void lone_act_row(int64_t k, const uint8_t* w, size_t ldw, const uint8_t* a, float* out,
                           int64_t ldo_w) {
    constexpr int kRowPairs = NW / 2;
    const int64_t blocks = k / kQK8_0;
    __m512 acc[kRowPairs > 0 ? kRowPairs : 1];
    __m256 odd = _mm256_setzero_ps();
    for (int p = 0; p < kRowPairs; ++p) acc[p] = _mm512_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b) {
      const LaneBlock* x = reinterpret_cast<const LaneBlock*>(a) + b;
      const __m256i q = _mm256_load_si256(reinterpret_cast<const __m256i*>(x->qs));
      const __m256i corr = _mm256_load_si256(reinterpret_cast<const __m256i*>(x->corr));
      const __m256 d = _mm256_load_ps(x->d);
      for (int p = 0; p < kRowPairs; ++p) {
        const WeightBlock lo = load_weight(w + 2 * p * ldw, b);
        const WeightBlock hi = load_weight(w + (2 * p + 1) * ldw, b);
        const __m512i u = _mm512_maskz_inserti64x4(0xff, simd::broadcast256(lo.u), hi.u, 1);
        const __m256i dbits =
            _mm256_inserti128_si256(_mm256_castsi128_si256(lo.dbits), hi.dbits, 1);
        const __m512 s =
            _mm512_mul_ps(_mm512_maskz_cvtph_ps(0xffff, dbits),
                          _mm512_castsi512_ps(simd::broadcast256(_mm256_castps_si256(d))));
        const __m512i i = _mm512_dpbusd_epi32(simd::broadcast256(corr), u, simd::broadcast256(q));
        acc[p] = _mm512_fmadd_ps(s, _mm512_maskz_cvtepi32_ps(0xffff, i), acc[p]);
      }
      if constexpr (NW % 2 == 1) {
        const WeightBlock wb = load_weight(w + (NW - 1) * ldw, b);
        const __m256i i = _mm256_dpbusd_epi32(corr, wb.u, q);
        const __m256 s = _mm256_mul_ps(_mm256_cvtph_ps(wb.dbits), d);
        odd = _mm256_fmadd_ps(s, _mm256_cvtepi32_ps(i), odd);
      }
    }
    for (int p = 0; p < kRowPairs; ++p) {
      out[2 * p * ldo_w] = hsum_half(acc[p], 0);
      out[(2 * p + 1) * ldo_w] = hsum_half(acc[p], 1);
    }
    if constexpr (NW % 2 == 1) out[(NW - 1) * ldo_w] = simd::hsum(odd);
  }
};

// 4 weight rows x 3 row pairs: 12 accumulators, 9 activation registers, the rest for the
// weight block and temporaries (AVX-512 has 32).
constexpr int kMaxW = 4;
constexpr int kMaxA = 6;

const PackedDot kPackedQ8_0Lanes = {kMaxW,         kMaxA, kGroup,
                                    act_row_bytes, pack,  tile_dispatch<LaneDot, kMaxW, kMaxA>};

#endif  // STRATA_CPU_AVX512

}  // namespace

const PackedDot* packed_dot_q8_0(core::Type weight_type, int64_t k) {
#if defined(STRATA_CPU_AVX512)
  if (weight_type == core::Type::kQ8_0 && k % kGroup == 0) return &kPackedQ8_0Lanes;
#else
  (void)weight_type;
  (void)k;
#endif
  return nullptr;
}

}  // namespace strata::cpu
