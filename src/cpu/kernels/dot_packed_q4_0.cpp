// Packed kernels for q4_0 weights with q8_0 activations: one weight row per int32 lane
// (dot_lanes_q0.h has the AVX-512 VNNI tiles, the panel and the arithmetic, shared with q8_0;
// dot_lanes8.h the same arithmetic in 256-bit registers for the other SIMD sets). This file
// reads sixteen q4_0 rows, either where they lie in GGUF's layout or regrouped at load
// (q4_0x16, core/quants/interleave.h): the quants are taken as the nibbles themselves
// (q + 8), and each packed activation block starts its lanes at -8 * (sum of its
// activations). Every reader, in either width, gives the same bits.
#include "core/blocks.h"
#include "core/quants/interleave.h"
#include "cpu/kernels/dot_lanes8.h"
#include "cpu/kernels/dot_lanes_q0.h"
#include "cpu/kernels/dot_packed.h"
#include "cpu/kernels/simd.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

using core::BlockQ4_0;
using core::kQK8_0;

#if defined(STRATA_CPU_AVX512)

using lanes::kRows;
using lanes::WeightBlock;

/// Sixteen q4_0 rows read in place. Rows past nw repeat the last one: their lanes compute
/// something finite that is never stored.
class Q4Rows {
 public:
  Q4Rows(int64_t k, const uint8_t* w, size_t ldw, int nw) : w_(w), blocks_(k / kQK8_0) {
    next_ = simd::prefetch_origin(w, kRows * ldw);
    lanes::row_offsets(ldw, nw, offset_);
  }

  /// Nothing: scales() asks for a later tile's rows as they are read.
  [[gnu::always_inline]] void ask_ahead(int64_t /*b*/) const {}

  /// Block b transposed: lane r of o.u[s] holds row r's levels of elements 4s..4s+3.
  [[gnu::always_inline]] void load(int64_t b, WeightBlock& o) const {
    o.dw = scales(b);
    __m512i t[4];
    lanes::transpose16x4(block(b) + offsetof(BlockQ4_0, qs), offset_, t);
    for (int j = 0; j < 4; ++j) {
      o.u[j] = _mm512_and_si512(t[j], low4());
      o.u[4 + j] = _mm512_and_si512(_mm512_srli_epi16(t[j], 4), low4());
    }
  }

  /// Block b's scales, row r in lane r (ask in block order: they come four blocks at a time).
  [[gnu::always_inline]] __m512 scales(int64_t b) const {
    if (b % kScalesPerLoad == 0) {
      Scales::load(block(b), offset_, blocks_ - b, scales_);
      simd::prefetch_tile_ahead<kScalesPerLoad * kRows * sizeof(BlockQ4_0)>(
          next_, static_cast<size_t>(b) * kRows * sizeof(BlockQ4_0));
    }
    return _mm512_load_ps(scales_[b % kScalesPerLoad]);
  }

  /// Decode's single activation row: the sixteen rows' exact sums of levels times block b's
  /// activations x, row r in lane r. Register i holds rows i, i + 4, i + 8 and i + 12, one per
  /// 128-bit lane: its low nibbles meet activations 0..15 and its high ones 16..31, and
  /// lane_sums4 leaves the sums in row order.
  [[gnu::always_inline]] __m512i lone_sums(int64_t b, const lanes::ActBlock& x) const {
    const auto load16 = [](const void* p) {
      return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    };
    const __m512i low_x = _mm512_maskz_broadcast_i32x4(0xffff, load16(x.qs));
    const __m512i high_x = _mm512_maskz_broadcast_i32x4(0xffff, load16(x.qs + 16));
    const uint8_t* qs = block(b) + offsetof(BlockQ4_0, qs);
    __m512i z[4];
    for (int i = 0; i < 4; ++i) {
      __m512i v = _mm512_zextsi128_si512(load16(qs + offset_[i]));
      v = _mm512_mask_broadcast_i32x4(v, 0x00f0, load16(qs + offset_[i + 4]));
      v = _mm512_mask_broadcast_i32x4(v, 0x0f00, load16(qs + offset_[i + 8]));
      v = _mm512_mask_broadcast_i32x4(v, 0xf000, load16(qs + offset_[i + 12]));
      z[i] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_and_si512(v, low4()), low_x);
      z[i] = _mm512_dpbusd_epi32(z[i], _mm512_and_si512(_mm512_srli_epi16(v, 4), low4()), high_x);
    }
    return lanes::lane_sums4(z);
  }

 private:
  // Four 18-byte blocks' scales per 64-byte load (words 0, 9, 18, 27).
  static constexpr int kScalesPerLoad = 4;
  using Scales = lanes::ScaleTree<kScalesPerLoad, sizeof(BlockQ4_0) / 2>;

  static __m512i low4() { return _mm512_set1_epi8(0x0f); }
  const uint8_t* block(int64_t b) const { return w_ + static_cast<size_t>(b) * sizeof(BlockQ4_0); }

  const uint8_t* w_;
  const uint8_t* next_;
  int64_t blocks_;
  size_t offset_[kRows];
  alignas(64) mutable float scales_[kScalesPerLoad][kRows];
};

constexpr PackedDot kPackedQ4_0 = lanes::packed_dot<Q4Rows, 8>();

/// Sixteen rows regrouped at load: block b is its scales and four registers of quants, which
/// hold the rows in lanes already. The group is one stream, which the hardware prefetchers
/// follow: software prefetches 1-16 KiB ahead only slowed it (Zen 4, one core from memory:
/// 28.8 GB/s without, 20-27 with).
class Q4Rows16 {
 public:
  Q4Rows16(int64_t /*k*/, const uint8_t* w, size_t /*ldw*/, int /*nw*/)
      : group_(reinterpret_cast<const core::BlockQ4_0x16*>(w)) {}

  /// Several activation rows: block b's lines lanes::kGroupAhead on.
  [[gnu::always_inline]] void ask_ahead(int64_t b) const {
    simd::prefetch_lines_ahead(group_ + b, sizeof(core::BlockQ4_0x16), lanes::kGroupAhead);
  }

  [[gnu::always_inline]] void load(int64_t b, WeightBlock& o) const {
    o.dw = scales(b);
    for (int j = 0; j < 4; ++j) {
      const __m512i t = quants(b, j);
      o.u[j] = _mm512_and_si512(t, low4());
      o.u[4 + j] = _mm512_and_si512(_mm512_srli_epi16(t, 4), low4());
    }
  }

  [[gnu::always_inline]] __m512 scales(int64_t b) const { return simd::load_halves16(group_[b].d); }

  /// Decode's single activation row: two chains of vpdpbusd (low and high nibbles), so the
  /// block's eight are not one dependency chain.
  [[gnu::always_inline]] __m512i lone_sums(int64_t b, const lanes::ActBlock& x) const {
    __m512i low = _mm512_setzero_si512();
    __m512i high = _mm512_setzero_si512();
    for (int j = 0; j < 4; ++j) {
      const __m512i t = quants(b, j);
      low = _mm512_dpbusd_epi32(low, _mm512_and_si512(t, low4()), lanes::broadcast4(x.qs + 4 * j));
      high = _mm512_dpbusd_epi32(high, _mm512_and_si512(_mm512_srli_epi16(t, 4), low4()),
                                 lanes::broadcast4(x.qs + 16 + 4 * j));
    }
    return _mm512_add_epi32(low, high);
  }

 private:
  static __m512i low4() { return _mm512_set1_epi8(0x0f); }
  [[gnu::always_inline]] __m512i quants(int64_t b, int j) const {
    return _mm512_loadu_si512(group_[b].qs[j]);
  }

  const core::BlockQ4_0x16* group_;
};

constexpr PackedDot kPackedQ4_0x16 = lanes::packed_dot<Q4Rows16, 8>();

#endif  // STRATA_CPU_AVX512

#if defined(STRATA_CPU_LANES8)

__m256i low_nibbles(__m256i t) {
  return _mm256_and_si256(t, _mm256_set1_epi8(0x0f));
}
__m256i high_nibbles(__m256i t) {
  return _mm256_and_si256(_mm256_srli_epi16(t, 4), _mm256_set1_epi8(0x0f));
}

/// Sixteen q4_0 rows read in place, each block of them transposed once into levels and
/// scales that every activation row of the tile reads.
class Q4Rows8 : public lanes8::PlainRows<BlockQ4_0> {
 public:
  using PlainRows::PlainRows;

  template <int H>
  [[gnu::always_inline]] void prepare(int64_t b, bool /*several*/) {
    ask_ahead(b);
    for (int h = 0; h < H; ++h) {
      __m256i t[4];
      transpose8x4(block_bytes(b) + offsetof(BlockQ4_0, qs), h, t);
      for (int j = 0; j < 4; ++j) {
        store_levels(h, j, low_nibbles(t[j]));
        store_levels(h, 4 + j, high_nibbles(t[j]));
      }
    }
    load_scales<H>(b);
  }
};

constexpr PackedDot kPackedQ4_0 = lanes8::packed_dot<Q4Rows8, lanes8::Levels::kNibbles>();

/// Sixteen rows regrouped at load: a register of eight rows' levels is one load and a mask.
class Q4Group8 : public lanes8::GroupRows<core::BlockQ4_0x16> {
 public:
  using GroupRows::GroupRows;

  [[gnu::always_inline]] __m256i levels(int64_t b, int h, int s) const {
    const __m256i t = quants(b, s % 4, h);
    return s < 4 ? low_nibbles(t) : high_nibbles(t);
  }
};

constexpr PackedDot kPackedQ4_0x16 = lanes8::packed_dot<Q4Group8, lanes8::Levels::kNibbles>();

#endif  // STRATA_CPU_LANES8

}  // namespace

const PackedDot* packed_dot_q4_0(core::Type weight_type, int64_t k) {
#if defined(STRATA_CPU_AVX512) || defined(STRATA_CPU_LANES8)
  if (weight_type == core::Type::kQ4_0 && k % kQK8_0 == 0) {
    return &kPackedQ4_0;
  }
  if (weight_type == core::Type::kQ4_0x16 && k % kQK8_0 == 0) return &kPackedQ4_0x16;
#else
  (void)weight_type;
  (void)k;
#endif
  return nullptr;
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
