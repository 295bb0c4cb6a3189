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
#include "core/blocks.h"
#include "core/quants/interleave.h"
#include "cpu/kernels/dot_lanes8.h"
#include "cpu/kernels/dot_lanes_q0.h"
#include "cpu/kernels/dot_packed.h"
#include "cpu/kernels/simd.h"
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

  /// Nothing: scales() asks for a later tile's rows as they are read.
  [[gnu::always_inline]] void ask_ahead(int64_t /*b*/) const {}

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

  /// Decode's single activation row: the sixteen rows' exact sums of levels times block b's
  /// activations x, row r in lane r. Two rows per register, a block in each half: one vpdpbusd
  /// gives each half eight partial sums, which lane_sums4 and one 128-bit shuffle add.
  [[gnu::always_inline]] __m512i lone_sums(int64_t b, const lanes::ActBlock& x) const {
    const __m512i xx =
        simd::broadcast256(_mm256_load_si256(reinterpret_cast<const __m256i*>(x.qs)));
    const uint8_t* qs = block(b) + offsetof(BlockQ8_0, qs);
    // Register i holds rows i and i + 4 (i < 4) or i + 4 and i + 8, which leaves the sums in
    // rows 0..3, 4..7 (v[0]) and 8..11, 12..15 (v[1]) after lane_sums4.
    __m512i z[2][4];
    for (int i = 0; i < 8; ++i) {
      const int lo = i < 4 ? i : i + 4;
      const __m256i first = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + offset_[lo]));
      const __m256i second =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + offset_[lo + 4]));
      const __m512i u = _mm512_xor_si512(
          _mm512_maskz_inserti64x4(0xff, simd::broadcast256(first), second, 1), flip());
      z[i / 4][i % 4] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, xx);
    }
    const __m512i v[2] = {lanes::lane_sums4(z[0]), lanes::lane_sums4(z[1])};
    // A row's two 128-bit lanes added.
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

constexpr PackedDot kPackedQ8_0 = lanes::packed_dot<Q8Rows, 128>();

/// Sixteen rows regrouped at load (core::BlockQ8_0x16): block b is its scales and eight
/// registers of quants with the rows in lanes already, one stream for the hardware prefetchers
/// and no transposes. Same levels, scales and order as Q8Rows, so the same bits.
class Q8Rows16 {
 public:
  Q8Rows16(int64_t /*k*/, const uint8_t* w, size_t /*ldw*/, int /*nw*/)
      : group_(reinterpret_cast<const core::BlockQ8_0x16*>(w)) {}

  /// Several activation rows: block b's lines lanes::kGroupAhead on.
  [[gnu::always_inline]] void ask_ahead(int64_t b) const {
    simd::prefetch_lines_ahead(group_ + b, sizeof(core::BlockQ8_0x16), lanes::kGroupAhead);
  }

  [[gnu::always_inline]] void load(int64_t b, WeightBlock& o) const {
    o.dw = scales(b);
    for (int s = 0; s < 8; ++s) o.u[s] = levels(b, s);
  }

  [[gnu::always_inline]] __m512 scales(int64_t b) const { return simd::load_halves16(group_[b].d); }

  /// Decode's single activation row: two chains of vpdpbusd, so the block's eight are not one
  /// dependency chain.
  [[gnu::always_inline]] __m512i lone_sums(int64_t b, const lanes::ActBlock& x) const {
    __m512i even = _mm512_setzero_si512();
    __m512i odd = _mm512_setzero_si512();
    for (int s = 0; s < 8; s += 2) {
      even = _mm512_dpbusd_epi32(even, levels(b, s), lanes::broadcast4(x.qs + 4 * s));
      odd = _mm512_dpbusd_epi32(odd, levels(b, s + 1), lanes::broadcast4(x.qs + 4 * s + 4));
    }
    return _mm512_add_epi32(even, odd);
  }

 private:
  static __m512i flip() { return _mm512_set1_epi8(static_cast<char>(0x80)); }
  /// Lane r: row r's unsigned levels of elements 4s..4s+3.
  [[gnu::always_inline]] __m512i levels(int64_t b, int s) const {
    return _mm512_xor_si512(_mm512_loadu_si512(group_[b].qs[s]), flip());
  }

  const core::BlockQ8_0x16* group_;
};

constexpr PackedDot kPackedQ8_0x16 = lanes::packed_dot<Q8Rows16, 128>();

#endif  // STRATA_CPU_AVX512

#if defined(STRATA_CPU_LANES8)

constexpr lanes8::Levels kBytes = lanes8::Levels::kBytes;

/// A row's quants as the 256-bit kernels take them: unsigned, 128 above the values, with
/// VNNI; as they are without (lanes8::Levels).
__m256i byte_levels(__m256i q) {
  return lanes8::level_offset(kBytes) == 0 ? q : _mm256_xor_si256(q, _mm256_set1_epi8(-128));
}

/// Sixteen q8_0 rows read in place, each block of them transposed once into levels and
/// scales that every activation row of the tile reads.
class Q8Rows8 : public lanes8::PlainRows<BlockQ8_0> {
 public:
  using PlainRows::PlainRows;

  template <int H>
  [[gnu::always_inline]] void prepare(int64_t b, bool /*several*/) {
    ask_ahead(b);
    for (int h = 0; h < H; ++h) {
      for (int half = 0; half < 2; ++half) {
        __m256i t[4];
        transpose8x4(block_bytes(b) + offsetof(BlockQ8_0, qs) + 16 * half, h, t);
        for (int j = 0; j < 4; ++j) store_levels(h, 4 * half + j, byte_levels(t[j]));
      }
    }
    load_scales<H>(b);
  }

  /// One activation row: each row's block against the whole activation block, its lanes then
  /// summed across the eight rows of a register (exact integers, so the Tile's sums). Reading a
  /// row's 32 bytes whole takes no transposes; --no-repack decode on avx2 had been slower with
  /// them than the vector-dot kernel (37.5 -> 33.5 t/s).
  static constexpr bool kLoneRows = true;
  template <int H>
  [[gnu::always_inline]] void lone_sums(int64_t b, const lanes::ActBlock& y, __m256i (&exact)[H]) {
    ask_ahead(b);
    load_scales<H>(b);
    const __m256i yq = _mm256_load_si256(reinterpret_cast<const __m256i*>(y.qs));
    for (int h = 0; h < H; ++h) {
      __m256i t[lanes8::kRows];
      for (int r = 0; r < lanes8::kRows; ++r) {
        const __m256i u = byte_levels(_mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(block(b, lanes8::kRows * h + r).qs)));
        t[r] = lanes8::level_offset(kBytes) == 0 ? simd::dot_i8_i8(u, yq) : simd::dot_u8_i8(u, yq);
      }
      exact[h] = _mm256_add_epi32(lanes8::sum_lanes8(t), _mm256_set1_epi32(y.corr));
    }
  }
};

constexpr PackedDot kPackedQ8_0 = lanes8::packed_dot<Q8Rows8, kBytes>();

/// Sixteen rows regrouped at load: a register of eight rows' levels is one load.
class Q8Group8 : public lanes8::GroupRows<core::BlockQ8_0x16> {
 public:
  using GroupRows::GroupRows;

  [[gnu::always_inline]] __m256i levels(int64_t b, int h, int s) const {
    return byte_levels(quants(b, s, h));
  }
};

constexpr PackedDot kPackedQ8_0x16 = lanes8::packed_dot<Q8Group8, kBytes>();

#endif  // STRATA_CPU_LANES8

}  // namespace

const PackedDot* packed_dot_q8_0(core::Type weight_type, int64_t k) {
#if defined(STRATA_CPU_AVX512) || defined(STRATA_CPU_LANES8)
  if (weight_type == core::Type::kQ8_0 && k % kQK8_0 == 0) return &kPackedQ8_0;
  if (weight_type == core::Type::kQ8_0x16 && k % kQK8_0 == 0) return &kPackedQ8_0x16;
#else
  (void)weight_type;
  (void)k;
#endif
  return nullptr;
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
