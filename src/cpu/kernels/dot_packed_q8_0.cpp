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

struct LaneDot {
  template <int NW, int NA>
  static void run(int64_t k, const uint8_t* w, size_t ldw, const uint8_t* a, size_t lda, float* out,
                  int64_t ldo_w, int64_t ldo_a) {
    constexpr int kPairs = NA / 2;
    constexpr bool kLone = NA % 2 == 1;  // the last row alone, in 256-bit registers
    const int64_t blocks = k / kQK8_0;
    __m512 acc[NW][kPairs > 0 ? kPairs : 1];
    __m256 lone[NW];
    for (int r = 0; r < NW; ++r) {
      for (int p = 0; p < kPairs; ++p) acc[r][p] = _mm512_setzero_ps();
      lone[r] = _mm256_setzero_ps();
    }
    const auto act = [&](int c, int64_t b) {
      return reinterpret_cast<const LaneBlock*>(a + c * lda) + b;
    };
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
    for (int64_t b = 0; b < blocks; ++b) {
      __m512i aq[kPairs > 0 ? kPairs : 1], ac[kPairs > 0 ? kPairs : 1];
      __m512 ad[kPairs > 0 ? kPairs : 1];
      for (int p = 0; p < kPairs; ++p) {
        const LaneBlock* x = act(2 * p, b);
        const LaneBlock* y = act(2 * p + 1, b);
        aq[p] = pair_i(x->qs, y->qs);
        ac[p] = pair_i(x->corr, y->corr);
        ad[p] = pair_f(x->d, y->d);
      }
      for (int r = 0; r < NW; ++r) {
        const auto* blk = reinterpret_cast<const BlockQ8_0*>(w + r * ldw) + b;
        // Two blocks are 68 bytes: one prefetch per pair of blocks covers nearly every line
        // (the hardware prefetcher fills the rest); one per block costs load slots.
        if (b % 2 == 0) _mm_prefetch(reinterpret_cast<const char*>(blk) + kPrefetch, _MM_HINT_T0);
        const __m256i u =
            _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->qs)), flip);
        const __m256i dbits = _mm256_set1_epi16(static_cast<int16_t>(blk->d.bits));
        if constexpr (kPairs > 0) {
          const __m512i uu = simd::broadcast256(u);
          const __m512 vdw = _mm512_maskz_cvtph_ps(0xffff, dbits);
          for (int p = 0; p < kPairs; ++p) {
            const __m512i i = _mm512_dpbusd_epi32(ac[p], uu, aq[p]);
            const __m512 s = _mm512_mul_ps(vdw, ad[p]);
            acc[r][p] = _mm512_fmadd_ps(s, _mm512_maskz_cvtepi32_ps(0xffff, i), acc[r][p]);
          }
        }
        if constexpr (kLone) {
          const LaneBlock* x = act(NA - 1, b);
          const __m256i i =
              _mm256_dpbusd_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(x->corr)), u,
                                  _mm256_load_si256(reinterpret_cast<const __m256i*>(x->qs)));
          const __m256 s =
              _mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(dbits)), _mm256_load_ps(x->d));
          lone[r] = _mm256_fmadd_ps(s, _mm256_cvtepi32_ps(i), lone[r]);
        }
      }
    }
    for (int r = 0; r < NW; ++r) {
      for (int p = 0; p < kPairs; ++p) {
        out[r * ldo_w + 2 * p * ldo_a] =
            simd::hsum(_mm512_maskz_extractf32x8_ps(0xff, acc[r][p], 0));
        out[r * ldo_w + (2 * p + 1) * ldo_a] =
            simd::hsum(_mm512_maskz_extractf32x8_ps(0xff, acc[r][p], 1));
      }
      if constexpr (kLone) out[r * ldo_w + (NA - 1) * ldo_a] = simd::hsum(lone[r]);
    }
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
