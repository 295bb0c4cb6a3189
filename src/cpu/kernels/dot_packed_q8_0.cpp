// Packed AVX-512 VNNI kernel for q8_0 weights with q8_0 activations, in llama.cpp's order.
//
// llama.cpp (x86) sums a q8_0 dot product in eight f32 lanes: per block, lane j takes the exact
// integer sum of elements 4j..4j+3 and adds it times d_w * d_a with one fused multiply-add,
// blocks in order; the eight lanes are summed at the end (simd::hsum). Matching that order is
// what keeps our logits equal to its own (a last-bit difference flips later int8 roundings).
//
// vpdpbusd wants unsigned weights: u = q ^ 0x80 = q + 128, and each packed activation block
// carries -128 * (sum of each lane's four activations) as the lanes' initial value. Decode (one
// activation row) takes a block per 256-bit load. With two to six activation rows, two rows
// share a 512-bit register: the weight block's 32 bytes are broadcast to both halves and the
// two rows' blocks sit in the low and high halves, so one vpdpbusd yields both rows' eight
// lanes for that block, and one multiply-add updates both rows' accumulators.
//
// Prefill keeps that order with one weight row per int32 lane instead (dot_lanes_q0.h): a
// chunk's tile of 32 rows is transposed once into a panel, where step s of a block (elements
// 4s..4s+3 of sixteen rows) is exactly llama.cpp's lane s of those rows. Lane s of every output
// is then summed over the blocks in one pass of its own, the passes' results added as
// simd::hsum adds the eight lanes. The float work per vpdpbusd drops from a multiply, a convert
// and a fused multiply-add on a weight block broadcast for two activation rows to a convert
// and a fused multiply-add on sixteen rows, the weights are unpacked once per chunk, and the
// bits stay those of the row kernels, which serve tiles of up to four weight rows.
#include <algorithm>
#include <cstring>

#include "core/blocks.h"
#include "core/float16.h"
#include "cpu/kernels/dot_lanes_q0.h"
#include "cpu/kernels/dot_packed.h"
#include "cpu/kernels/dot_tile.h"
#include "cpu/kernels/quantize_act.h"
#include "cpu/kernels/simd_int.h"

namespace strata::cpu::STRATA_KERNEL_NS {
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

// Blocks b .. b + N - 1 of the next NW rows (simd::prefetch_tile_ahead).
template <int NW, int N>
[[gnu::always_inline]] inline void prefetch_ahead(const uint8_t* next, int64_t b) {
  simd::prefetch_tile_ahead<NW * N * sizeof(BlockQ8_0)>(
      next, static_cast<size_t>(NW * b) * sizeof(BlockQ8_0));
}

// The weight block's levels as unsigned bytes (q + 128) and its scale's bits.
struct WeightBlock {
  __m256i u;
  __m128i dbits;  ///< the f16 scale in all eight words
};

[[gnu::always_inline]] inline WeightBlock load_weight(const uint8_t* row, int64_t b) {
  const auto* blk = reinterpret_cast<const BlockQ8_0*>(row) + b;
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  return {_mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->qs)), flip),
          _mm_set1_epi16(static_cast<int16_t>(blk->d.bits))};
}

struct Index64 {
  alignas(64) uint8_t v[64];
};

inline __m512i load_index(const Index64& x) {
  return _mm512_load_si512(x.v);
}

// The f16 scales of four consecutive weight blocks (bytes 0, 34, 68, 102 from p: words 0 and
// 17 of a 64-byte load at p, 2 and 19 of one at p + 64), in words 0..3.
constexpr Index64 scale_words_index() {
  Index64 x{};
  const int words[4] = {0, 17, 32 + 2, 32 + 19};
  for (int i = 0; i < 4; ++i) x.v[2 * i] = static_cast<uint8_t>(words[i]);
  return x;
}
constexpr Index64 kScaleWords = scale_words_index();

inline __m256 low8(__m512 v) {
  return _mm512_maskz_extractf32x8_ps(0xff, v, 0);
}
inline __m256 high8(__m512 v) {
  return _mm512_maskz_extractf32x8_ps(0xff, v, 1);
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
    const uint8_t* next = simd::prefetch_origin(w, NW * ldw);
    for (int64_t b = 0; b < blocks; ++b) {
      if (b % 2 == 0) prefetch_ahead<NW, 2>(next, b);
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
        out[r * ldo_w + 2 * p * ldo_a] = simd::hsum(low8(acc[r][p]));
        out[r * ldo_w + (2 * p + 1) * ldo_a] = simd::hsum(high8(acc[r][p]));
      }
    }
  }

  // One activation row (decode). Each block's 32 weights are read with one 256-bit load (at
  // the block's offset 2) and summed in eight lanes by one vpdpbusd; the product of the two
  // scales is one fused multiply-add operand broadcast from memory. Four blocks' weight scales
  // are gathered from two 64-byte loads by one permute, converted and multiplied by the
  // activation scales at once. 512-bit shuffles and lane extracts, which cost twice on cores
  // that split 512-bit work into halves, stay out of the loop.
  template <int NW>
  static void lone_act_row(int64_t k, const uint8_t* w, size_t ldw, const uint8_t* a, float* out,
                           int64_t ldo_w) {
    const int64_t blocks = k / kQK8_0;
    const int64_t grouped = blocks / 4 * 4;
    __m256 acc[NW];
    for (int r = 0; r < NW; ++r) acc[r] = _mm256_setzero_ps();
    const auto* x = reinterpret_cast<const LaneBlock*>(a);
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
    const __m512i scale_words = load_index(kScaleWords);
    alignas(16) float scale[NW][4];
    const uint8_t* next = simd::prefetch_origin(w, NW * ldw);
    for (int64_t b = 0; b < grouped; b += 4) {
      const __m128 da = _mm_setr_ps(x[b].d[0], x[b + 1].d[0], x[b + 2].d[0], x[b + 3].d[0]);
      prefetch_ahead<NW, 4>(next, b);
      for (int r = 0; r < NW; ++r) {
        const uint8_t* p = w + r * ldw + static_cast<size_t>(b) * sizeof(BlockQ8_0);
        const __m512i dw = _mm512_permutex2var_epi16(_mm512_loadu_si512(p), scale_words,
                                                     _mm512_loadu_si512(p + 64));
        _mm_store_ps(scale[r],
                     _mm_mul_ps(_mm_cvtph_ps(_mm512_maskz_extracti32x4_epi32(0xf, dw, 0)), da));
      }
      for (int j = 0; j < 4; ++j) {
        const __m256i q = _mm256_load_si256(reinterpret_cast<const __m256i*>(x[b + j].qs));
        const __m256i corr = _mm256_load_si256(reinterpret_cast<const __m256i*>(x[b + j].corr));
        for (int r = 0; r < NW; ++r) {
          const uint8_t* p = w + r * ldw + static_cast<size_t>(b + j) * sizeof(BlockQ8_0);
          const __m256i u = _mm256_xor_si256(
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + offsetof(BlockQ8_0, qs))),
              flip);
          const __m256 f = _mm256_cvtepi32_ps(_mm256_dpbusd_epi32(corr, u, q));
          acc[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(&scale[r][j]), f, acc[r]);
        }
      }
    }
    for (int64_t b = grouped; b < blocks; ++b) {
      const __m256i q = _mm256_load_si256(reinterpret_cast<const __m256i*>(x[b].qs));
      const __m256i corr = _mm256_load_si256(reinterpret_cast<const __m256i*>(x[b].corr));
      const __m256 d = _mm256_load_ps(x[b].d);
      for (int r = 0; r < NW; ++r) {
        const WeightBlock wb = load_weight(w + r * ldw, b);
        const __m256i i = _mm256_dpbusd_epi32(corr, wb.u, q);
        const __m256 s = _mm256_mul_ps(_mm256_cvtph_ps(wb.dbits), d);
        acc[r] = _mm256_fmadd_ps(s, _mm256_cvtepi32_ps(i), acc[r]);
      }
    }
    for (int r = 0; r < NW; ++r) out[r * ldo_w] = simd::hsum(acc[r]);
  }
};

// 4 weight rows x 3 row pairs: 12 accumulators, 9 activation registers, the rest for the
// weight block and temporaries (AVX-512 has 32).
constexpr int kMaxW = 4;
constexpr int kMaxA = 6;

/// A tile of up to 32 rows (the panel's), four rows at a time.
void row_pairs_tile(int64_t k, const uint8_t* w, size_t ldw, int nw, const uint8_t* a, size_t lda,
                    int na, float* out, int64_t ldo_w, int64_t ldo_a) {
  for (int r = 0; r < nw; r += kMaxW) {
    tile_dispatch<LaneDot, kMaxW, kMaxA>(k, w + r * ldw, ldw, std::min(kMaxW, nw - r), a, lda, na,
                                         out + r * ldo_w, ldo_w, ldo_a);
  }
}

using lanes::kRows;

/// Sixteen q8_0 rows read in place for the panel, as unsigned levels. Rows past nw repeat the
/// last one: their lanes compute something finite that is never stored.
class Q8Rows {
 public:
  Q8Rows(int64_t k, const uint8_t* w, size_t ldw, int nw) : w_(w), blocks_(k / kQK8_0) {
    lanes::row_offsets(ldw, nw, offset_);
  }

  [[gnu::always_inline]] void load(int64_t b, lanes::WeightBlock& o) const {
    const uint8_t* base = w_ + static_cast<size_t>(b) * sizeof(BlockQ8_0);
    if (b % kScalesPerLoad == 0) Scales::load(base, offset_, blocks_ - b, scales_);
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    for (int half = 0; half < 2; ++half) {
      __m512i t[4];
      lanes::transpose16x4(base + offsetof(BlockQ8_0, qs) + 16 * half, offset_, t);
      for (int j = 0; j < 4; ++j) o.u[4 * half + j] = _mm512_xor_si512(t[j], flip);
    }
    o.dw = _mm512_load_ps(scales_[b % kScalesPerLoad]);
  }

 private:
  // Two 34-byte blocks' scales per 64-byte load (words 0 and 17).
  static constexpr int kScalesPerLoad = 2;
  using Scales = lanes::ScaleTree<kScalesPerLoad, sizeof(BlockQ8_0) / 2>;

  const uint8_t* w_;
  int64_t blocks_;
  size_t offset_[kRows];
  alignas(64) mutable float scales_[kScalesPerLoad][kRows];
};

// Prefill from a panel: pass s sums lane s of every output over a segment of blocks, each
// block's d_w * d_a computed once per segment for all eight passes.
struct LanePasses {
  static constexpr int kSegment = 8;  ///< blocks per segment

  template <int H, int NA>
  static void run(int64_t k, const uint8_t* w, size_t, int nw, const uint8_t* a, size_t lda,
                  float* out, int64_t ldo_w, int64_t ldo_a) {
    const auto* p = reinterpret_cast<const lanes::PanelBlock*>(w);
    const auto act = [&](int c, int64_t b) -> const LaneBlock& {
      return reinterpret_cast<const LaneBlock*>(a + c * lda)[b];
    };
    const int64_t blocks = k / kQK8_0;
    __m512 lane[8][H][NA];
    for (int s = 0; s < 8; ++s) {
      for (int h = 0; h < H; ++h) {
        for (int c = 0; c < NA; ++c) lane[s][h][c] = _mm512_setzero_ps();
      }
    }
    for (int64_t b0 = 0; b0 < blocks; b0 += kSegment) {
      const int nb = static_cast<int>(std::min<int64_t>(kSegment, blocks - b0));
      __m512 scale[kSegment][H][NA];
      for (int i = 0; i < nb; ++i) {
        for (int h = 0; h < H; ++h) {
          const __m512 dw = _mm512_load_ps(p[b0 + i].dw[h]);
          for (int c = 0; c < NA; ++c) {
            scale[i][h][c] = _mm512_mul_ps(dw, _mm512_set1_ps(act(c, b0 + i).d[0]));
          }
        }
      }
      for (int s = 0; s < 8; ++s) {
        __m512 acc[H][NA];
        for (int h = 0; h < H; ++h) {
          for (int c = 0; c < NA; ++c) acc[h][c] = lane[s][h][c];
        }
        for (int i = 0; i < nb; ++i) {
          const int64_t b = b0 + i;
          __m512i u[H];
          for (int h = 0; h < H; ++h) u[h] = _mm512_load_si512(p[b].u[s][h]);
          for (int c = 0; c < NA; ++c) {
            const LaneBlock& y = act(c, b);
            const __m512i q = lanes::broadcast4(y.qs + 4 * s);
            const __m512i corr = _mm512_set1_epi32(y.corr[s]);
            for (int h = 0; h < H; ++h) {
              const __m512i sum = _mm512_dpbusd_epi32(corr, u[h], q);
              acc[h][c] =
                  _mm512_fmadd_ps(scale[i][h][c], _mm512_maskz_cvtepi32_ps(0xffff, sum), acc[h][c]);
            }
          }
        }
        for (int h = 0; h < H; ++h) {
          for (int c = 0; c < NA; ++c) lane[s][h][c] = acc[h][c];
        }
      }
    }
    // simd::hsum's order: ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)).
    __m512 sum[H][NA];
    for (int h = 0; h < H; ++h) {
      for (int c = 0; c < NA; ++c) {
        const auto pair = [&](int i, int j) { return _mm512_add_ps(lane[i][h][c], lane[j][h][c]); };
        sum[h][c] = _mm512_add_ps(_mm512_add_ps(pair(0, 4), pair(2, 6)),
                                  _mm512_add_ps(pair(1, 5), pair(3, 7)));
      }
    }
    lanes::store_rows<H, NA>(sum, nw, out, ldo_w, ldo_a);
  }
};

const PackedDot kPackedQ8_0Lanes = {
    .max_w = lanes::kHalves * kRows,
    .max_a = kMaxA,
    .group = kGroup,
    .act_row_bytes = act_row_bytes,
    .pack = pack,
    .tile = row_pairs_tile,
    .panel_bytes = lanes::panel_bytes,
    .pack_panel = lanes::pack_panel<Q8Rows>,
    .panel_tile = lanes::dispatch<LanePasses, lanes::kHalves, kMaxA>,
};

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

}  // namespace strata::cpu::STRATA_KERNEL_NS
