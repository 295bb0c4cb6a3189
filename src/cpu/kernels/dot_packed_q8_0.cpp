// Packed AVX-512 VNNI kernel for q8_0 weights with q8_0 activations: one weight row per int32
// lane (dot_lanes_q0.h has the tiles, the panel and the arithmetic, shared with q4_0). This
// file reads sixteen q8_0 rows: vpdpbusd wants unsigned weights, so the levels are taken as
// u = q ^ 0x80 = q + 128, and each packed activation block starts its lanes at -128 * (sum of
// its activations).
//
// Each block's integer dot product is exact, so the sum differs from llama.cpp's q8_0 kernel,
// which adds a block's eight partial sums in eight float lanes, only in the float rounding of
// the blocks' sum (the logits stay within a few hundredths of the format's quantization error
// of its own; tests/engine/test_golden.cpp).
#include <algorithm>

#include "core/blocks.h"
#include "cpu/kernels/dot_lanes_q0.h"
#include "cpu/kernels/dot_packed.h"
#include "cpu/kernels/simd_int.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

using core::BlockQ8_0;
using core::kQK8_0;

#if defined(STRATA_CPU_AVX512)

using lanes::kRows;
using lanes::WeightBlock;

/// Sixteen q8_0 rows read in place, as unsigned levels. Rows past nw repeat the last one: their
/// lanes compute something finite that is never stored.
class Q8Rows {
 public:
  Q8Rows(int64_t k, const uint8_t* w, size_t ldw, int nw) : w_(w), blocks_(k / kQK8_0) {
    next_ = simd::prefetch_origin(w, kRows * ldw);
    lanes::row_offsets(ldw, nw, offset_);
  }

  /// Block b transposed: lane r of o.u[s] holds row r's levels of elements 4s..4s+3.
  [[gnu::always_inline]] void load(int64_t b, WeightBlock& o) const {
    o.dw = scales(b);
    const uint8_t* qs = block(b) + offsetof(BlockQ8_0, qs);
    for (int half = 0; half < 2; ++half) {
      __m512i t[4];
      lanes::transpose16x4(qs + 16 * half, offset_, t);
      for (int j = 0; j < 4; ++j) o.u[4 * half + j] = _mm512_xor_si512(t[j], flip());
    }
  }

  /// Block b's scales, row r in lane r (ask in block order: they come two blocks at a time).
  [[gnu::always_inline]] __m512 scales(int64_t b) const {
    if (b % kScalesPerLoad == 0) {
      Scales::load(block(b), offset_, blocks_ - b, scales_);
      simd::prefetch_tile_ahead<kScalesPerLoad * kRows * sizeof(BlockQ8_0)>(
          next_, static_cast<size_t>(b) * kRows * sizeof(BlockQ8_0));
    }
    return _mm512_load_ps(scales_[b % kScalesPerLoad]);
  }

  /// Decode's single activation row: the sixteen rows' exact sums of levels times the block's
  /// activations (x: its 32 bytes in both halves), row r in lane r. Two rows per register, a
  /// block in each half: one vpdpbusd gives each half eight partial sums, and a tree of
  /// in-lane unpacks and one 128-bit shuffle adds them, with no transposes.
  [[gnu::always_inline]] __m512i lone_sums(int64_t b, __m512i x) const {
    const uint8_t* qs = block(b) + offsetof(BlockQ8_0, qs);
    // Register i holds rows i and i + 4 (i < 4) or i + 4 and i + 8, which the tree below
    // leaves in lanes 0..15 in row order.
    __m512i z[8];
    for (int i = 0; i < 8; ++i) {
      const int lo = i < 4 ? i : i + 4;
      const __m256i first = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + offset_[lo]));
      const __m256i second =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + offset_[lo + 4]));
      const __m512i u = _mm512_xor_si512(
          _mm512_maskz_inserti64x4(0xff, simd::broadcast256(first), second, 1), flip());
      z[i] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, x);
    }
    // (Zero-masked forms: GCC 12 flags the unmasked ones as maybe-uninitialized.)
    // Per 128-bit lane: [a0 a1 a2 a3], [b0 ..] -> [a0+a2, b0+b2, a1+a3, b1+b3].
    __m512i t[4];
    for (int i = 0; i < 4; ++i) {
      t[i] = _mm512_add_epi32(_mm512_maskz_unpacklo_epi32(0xffff, z[2 * i], z[2 * i + 1]),
                              _mm512_maskz_unpackhi_epi32(0xffff, z[2 * i], z[2 * i + 1]));
    }
    // -> [sum a, sum b, sum c, sum d] of each 128-bit lane.
    __m512i v[2];
    for (int i = 0; i < 2; ++i) {
      v[i] = _mm512_add_epi32(_mm512_maskz_unpacklo_epi64(0xff, t[2 * i], t[2 * i + 1]),
                              _mm512_maskz_unpackhi_epi64(0xff, t[2 * i], t[2 * i + 1]));
    }
    // A row's two 128-bit lanes added: rows 0..3, 4..7 from v[0], 8..11, 12..15 from v[1].
    return _mm512_add_epi32(
        _mm512_maskz_shuffle_i32x4(0xffff, v[0], v[1], _MM_SHUFFLE(2, 0, 2, 0)),
        _mm512_maskz_shuffle_i32x4(0xffff, v[0], v[1], _MM_SHUFFLE(3, 1, 3, 1)));
  }

 private:
  // Two 34-byte blocks' scales per 64-byte load (words 0 and 17).
  static constexpr int kScalesPerLoad = 2;
  using Scales = lanes::ScaleTree<kScalesPerLoad, sizeof(BlockQ8_0) / 2>;

  static __m512i flip() { return _mm512_set1_epi8(static_cast<char>(0x80)); }
  const uint8_t* block(int64_t b) const { return w_ + static_cast<size_t>(b) * sizeof(BlockQ8_0); }

  const uint8_t* w_;
  const uint8_t* next_;
  int64_t blocks_;
  size_t offset_[kRows];
  alignas(64) mutable float scales_[kScalesPerLoad][kRows];
};

// Tiles read in place: decode's single activation row sums each row's blocks where they lie
// (Q8Rows::lone_sums); two or more rows share the transpose of the weights (PlainTile).
struct Q8Tile {
  template <int H, int NA>
  static void run(int64_t k, const uint8_t* w, size_t ldw, int nw, const uint8_t* a, size_t lda,
                  float* out, int64_t ldo_w, int64_t ldo_a) {
    if constexpr (NA > 1) {
      lanes::PlainTile<Q8Rows>::run<H, NA>(k, w, ldw, nw, a, lda, out, ldo_w, ldo_a);
    } else {
      for (int h = 0; h < H; ++h) {
        lone_half(k, w + kRows * h * ldw, ldw, std::min(nw - kRows * h, kRows), a,
                  out + kRows * h * ldo_w, ldo_w);
      }
    }
  }

  static void lone_half(int64_t k, const uint8_t* w, size_t ldw, int nw, const uint8_t* a,
                        float* out, int64_t ldo_w) {
    const Q8Rows rows(k, w, ldw, nw);
    __m512 acc[1][1] = {{_mm512_setzero_ps()}};
    for (int64_t b = 0; b < k / kQK8_0; ++b) {
      const lanes::ActBlock& x = lanes::act(a, 0, 0, b);
      const __m512 dw = rows.scales(b);
      const __m512i xx =
          simd::broadcast256(_mm256_load_si256(reinterpret_cast<const __m256i*>(x.qs)));
      const __m512i sum = _mm512_add_epi32(rows.lone_sums(b, xx), _mm512_set1_epi32(x.corr));
      lanes::add_block(acc[0][0], sum, dw, x.d);
    }
    lanes::store_rows<1, 1>(acc, nw, out, ldo_w, 0);
  }
};

constexpr PackedDot kPackedQ8_0 = [] {
  PackedDot d = lanes::packed_dot<Q8Rows, 128>();
  d.tile = lanes::dispatch<Q8Tile, lanes::kHalves, lanes::kMaxA>;
  return d;
}();

#endif  // STRATA_CPU_AVX512

}  // namespace

const PackedDot* packed_dot_q8_0(core::Type weight_type, int64_t k) {
#if defined(STRATA_CPU_AVX512)
  if (weight_type == core::Type::kQ8_0 && k % kQK8_0 == 0) return &kPackedQ8_0;
#else
  (void)weight_type;
  (void)k;
#endif
  return nullptr;
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
