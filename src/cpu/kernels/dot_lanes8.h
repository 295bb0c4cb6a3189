// The one-row-per-lane kernels for 32-element block weights (q4_0, q8_0) in 256-bit registers,
// for the kernel sets without AVX-512 VNNI (avx2, avxvnni, avx512): the arithmetic of
// dot_lanes_q0.h, eight rows per register instead of sixteen.
//
// Lane r of a register holds four consecutive levels of row r; one byte dot product
// against four activation bytes broadcast to every lane advances eight rows, and a block's
// eight steps leave each lane with its row's exact integer block sum. Per row and block, in
// block order: acc = fma(float(sum), d_w * d_a, acc), the float work done for eight outputs
// at once with no horizontal sum. That is the 512-bit kernels' arithmetic lane for lane, so
// every set that has these kernels gives the same bits (and, for q4_0, llama.cpp's, whose
// repacked q4_0 kernels sum in this order too).
//
// With VNNI (AVX-VNNI's vpdpbusd) a step is one instruction; without it, a few (Levels).
//
// A tile is sixteen rows (two registers: one group of the x16 layouts of
// core/quants/interleave.h) by up to kMaxA activation rows. A type brings a Rows class (built
// on PlainRows or GroupRows below):
//   Rows(k, w, ldw, nw)               the tile's rows (rows past nw repeat row nw - 1)
//   template <int H> void prepare(int64_t b, bool several)
//                                     block b is next (several: more than one activation row)
//   __m256i levels(int64_t b, int h, int s)
//                                     register h's levels of elements 4s..4s+3 (Levels)
//   __m256 scales(int64_t b, int h)   register h's rows' d
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "cpu/kernels/dot_lanes_act.h"
#include "cpu/kernels/dot_packed.h"
#include "cpu/kernels/dot_tile.h"
#include "cpu/kernels/simd.h"
#include "cpu/kernels/simd_int.h"

#if defined(STRATA_CPU_AVX2) && !defined(STRATA_CPU_AVX512)
#define STRATA_CPU_LANES8 1

namespace strata::cpu::STRATA_KERNEL_NS::lanes8 {

using lanes::act;
using lanes::ActBlock;

constexpr int kRows = 8;    ///< weight rows per register: one per int32 lane
constexpr int kHalves = 2;  ///< registers of rows per tile
constexpr int kSteps = 8;   ///< four-element steps per block
constexpr int64_t kBlock = 32;

/// How far ahead of its reads a tile of rows regrouped at load asks for their lines when it
/// has several activation rows (the 512-bit kernels' distance, lanes::kGroupAhead).
inline constexpr size_t kGroupAhead = 8 << 10;

/// What a Rows class's levels are. With VNNI both kinds are unsigned bytes, level_offset()
/// above the values (vpdpbusd takes unsigned weights, and the activations' correction takes the
/// offset back). Without it, nibbles (q4_0: up to 15) go through vpmaddubsw's int16 pairs, summed
/// in int16 over the block; bytes (q8_0) would saturate those pairs as unsigned, so they stay
/// signed (offset 0) and each step pairs their magnitudes with the activations carrying
/// their signs, widened to int32 at once.
enum class Levels { kNibbles, kBytes };

/// One block's exact sums of levels times activations, for eight rows, started from the
/// activation block's offset correction.
template <Levels kLevels>
struct BlockSums {
#if defined(STRATA_CPU_VNNI)
  __m256i sum;
  [[gnu::always_inline]] void start(int32_t corr) {
    sum = _mm256_set1_epi32(corr);
  }
  [[gnu::always_inline]] void add(__m256i u, __m256i y) {
    sum = simd::dpbusd(sum, u, y);
  }
  [[gnu::always_inline]] __m256i exact() const {
    return sum;
  }
#else
  // Nibbles: int16 pairs, eight steps of them |sum| <= 8 * 2 * 15 * 127 < 2^15. Bytes: int32.
  __m256i partial;
  int32_t corr;
  [[gnu::always_inline]] void start(int32_t c) {
    partial = _mm256_setzero_si256();
    corr = c;
  }
  [[gnu::always_inline]] void add(__m256i u, __m256i y) {
    if constexpr (kLevels == Levels::kNibbles) {
      partial = _mm256_add_epi16(partial, _mm256_maddubs_epi16(u, y));
    } else {
      partial = _mm256_add_epi32(partial, simd::dot_i8_i8(u, y));
    }
  }
  [[gnu::always_inline]] __m256i exact() const {
    const __m256i sums =
        kLevels == Levels::kNibbles ? _mm256_madd_epi16(partial, _mm256_set1_epi16(1)) : partial;
    return _mm256_add_epi32(sums, _mm256_set1_epi32(corr));
  }
#endif
};

/// Eight rows' lanes of partial sums (t[r] row r's) summed across lanes: lane r of the result is
/// row r's total.
[[gnu::always_inline]] inline __m256i sum_lanes8(const __m256i (&t)[kRows]) {
  const __m256i a0 = _mm256_hadd_epi32(t[0], t[1]), a1 = _mm256_hadd_epi32(t[2], t[3]);
  const __m256i a2 = _mm256_hadd_epi32(t[4], t[5]), a3 = _mm256_hadd_epi32(t[6], t[7]);
  // b0: rows 0-3's sums of their low 128-bit halves, then of their high ones; b1: rows 4-7's.
  const __m256i b0 = _mm256_hadd_epi32(a0, a1), b1 = _mm256_hadd_epi32(a2, a3);
  return _mm256_add_epi32(_mm256_permute2x128_si256(b0, b1, 0x20),
                          _mm256_permute2x128_si256(b0, b1, 0x31));
}

/// The offset of a kind's levels above the values.
constexpr int level_offset(Levels kind) {
#if defined(STRATA_CPU_VNNI)
  return kind == Levels::kNibbles ? 8 : 128;
#else
  return kind == Levels::kNibbles ? 8 : 0;
#endif
}

/// The tile: for each block, each register of rows against every activation row.
template <class Rows, Levels kLevels>
struct Tile {
  template <int H, int NA>
  static void run(int64_t k, const uint8_t* w, size_t ldw, int nw, const uint8_t* a, size_t lda,
                  float* out, int64_t ldo_w, int64_t ldo_a) {
    Rows rows(k, w, ldw, nw);
    __m256 acc[H][NA];
    for (int h = 0; h < H; ++h) {
      for (int c = 0; c < NA; ++c) acc[h][c] = _mm256_setzero_ps();
    }
    for (int64_t b = 0; b < k / kBlock; ++b) {
      if constexpr (NA == 1 && requires { Rows::kLoneRows; }) {
        // One activation row, where the reader sums each row on its own (lone_sums): no
        // transposes, the same exact sums and float steps.
        const lanes::ActBlock& y = act(a, lda, 0, b);
        __m256i exact[H];
        rows.template lone_sums<H>(b, y, exact);
        for (int h = 0; h < H; ++h) {
          const __m256 scale = _mm256_mul_ps(rows.scales(b, h), _mm256_set1_ps(y.d));
          acc[h][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(exact[h]), scale, acc[h][0]);
        }
        continue;
      }
      rows.template prepare<H>(b, NA > 1);
      BlockSums<kLevels> sums[H][NA];
      for (int c = 0; c < NA; ++c) {
        for (int h = 0; h < H; ++h) sums[h][c].start(act(a, lda, c, b).corr);
      }
      // Each broadcast activation dword feeds every register of rows.
      for (int s = 0; s < kSteps; ++s) {
        __m256i u[H];
        for (int h = 0; h < H; ++h) u[h] = rows.levels(b, h, s);
        for (int c = 0; c < NA; ++c) {
          const __m256i y = _mm256_set1_epi32(lanes::act_dword(act(a, lda, c, b).qs + 4 * s));
          for (int h = 0; h < H; ++h) sums[h][c].add(u[h], y);
        }
      }
      for (int h = 0; h < H; ++h) {
        const __m256 dw = rows.scales(b, h);
        for (int c = 0; c < NA; ++c) {
          const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(act(a, lda, c, b).d));
          acc[h][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums[h][c].exact()), scale, acc[h][c]);
        }
      }
    }
    store_register_rows<kRows>(acc, nw, out, ldo_w, ldo_a);
  }
};

/// The DotTileFn of a tile kernel Kernel::run<H, NA> (H registers of eight rows).
template <class Kernel, int H, int NA>
constexpr DotTileFn dispatch = register_tile_dispatch<Kernel, kRows, H, NA>;

/// The tile's sixteen rows where they lie (GGUF's layout): where each row starts, their blocks
/// transposed eight rows at a time, and the next tile's lines asked for as these are read.
/// Rows past nw repeat row nw - 1.
template <class Block>
class RowsInPlace {
 public:
  RowsInPlace(int64_t /*k*/, const uint8_t* w, size_t ldw, int nw) : w_(w) {
    next_ = simd::prefetch_origin(w, kHalves * kRows * ldw);
    for (int r = 0; r < kHalves * kRows; ++r) {
      offset_[r] = static_cast<size_t>(std::min(r, nw - 1)) * ldw;
    }
  }

 protected:
  /// The tile's next rows' block b, kPrefetchAhead on.
  const uint8_t* ahead(int64_t b) const {
    return next_ + static_cast<size_t>(b) * kHalves * kRows * sizeof(Block);
  }

  /// The tile's next rows, a block of each at the step that reads this one.
  [[gnu::always_inline]] void ask_ahead(int64_t b) const {
    simd::prefetch_tile_ahead<kHalves * kRows * sizeof(Block)>(ahead(b), 0);
  }

  /// Sixteen bytes at p + offset(8 h + r) for r < 8, transposed: t[j] lane r holds dword j
  /// of row 8 h + r's bytes (rows r and r + 4 share a register, a 4x4 transpose per half).
  [[gnu::always_inline]] void transpose8x4(const uint8_t* p, int h, __m256i (&t)[4]) const {
    __m256i z[4];
    for (int i = 0; i < 4; ++i) {
      const auto row = [&](int r) {
        return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + offset_[kRows * h + r]));
      };
      z[i] = _mm256_set_m128i(row(i + 4), row(i));
    }
    const __m256i a0 = _mm256_unpacklo_epi32(z[0], z[1]);
    const __m256i a1 = _mm256_unpackhi_epi32(z[0], z[1]);
    const __m256i b0 = _mm256_unpacklo_epi32(z[2], z[3]);
    const __m256i b1 = _mm256_unpackhi_epi32(z[2], z[3]);
    t[0] = _mm256_unpacklo_epi64(a0, b0);
    t[1] = _mm256_unpackhi_epi64(a0, b0);
    t[2] = _mm256_unpacklo_epi64(a1, b1);
    t[3] = _mm256_unpackhi_epi64(a1, b1);
  }

  /// Block b of the tile's first row; row r's lies offset(r) further on.
  const uint8_t* block_bytes(int64_t b) const {
    return w_ + static_cast<size_t>(b) * sizeof(Block);
  }

  /// Where the tile's row r starts, from its first.
  size_t offset(int r) const { return offset_[r]; }

  /// Block b of row r.
  const Block& block(int64_t b, int r) const {
    return *reinterpret_cast<const Block*>(block_bytes(b) + offset_[r]);
  }

 private:
  const uint8_t* w_;
  const uint8_t* next_;
  size_t offset_[kHalves * kRows];
};

/// Rows read where they lie, for the Tile: block b of the tile's rows transposed into a block's
/// worth of registers in memory (one row per lane), which levels() then reads. A type's reader
/// derives from it and fills them in its prepare<H>(b, several) with transpose8x4,
/// store_levels and load_scales.
template <class Block>
class PlainRows : public RowsInPlace<Block> {
 public:
  using RowsInPlace<Block>::RowsInPlace;

  [[gnu::always_inline]] __m256i levels(int64_t /*b*/, int h, int s) const {
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(u_[h][s]));
  }
  [[gnu::always_inline]] __m256 scales(int64_t /*b*/, int h) const {
    return _mm256_load_ps(d_ + kRows * h);
  }

 protected:
  [[gnu::always_inline]] void store_levels(int h, int s, __m256i u) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(u_[h][s]), u);
  }

  /// Block b's scales (Block::d) of the rows of registers 0..H-1.
  template <int H>
  [[gnu::always_inline]] void load_scales(int64_t b) {
    for (int r = 0; r < H * kRows; ++r) d_[r] = simd::half_to_float(this->block(b, r).d);
  }

 private:
  alignas(32) uint8_t u_[kHalves][kSteps][32];
  alignas(32) float d_[kHalves * kRows];
};

/// Sixteen rows regrouped at load (a Group of the x16 layouts): quants(b, s, h) is register
/// h's quant bytes of step s, one load, which a type's reader turns into its levels.
template <class Group>
class GroupRows {
 public:
  GroupRows(int64_t /*k*/, const uint8_t* w, size_t /*ldw*/, int /*nw*/)
      : group_(reinterpret_cast<const Group*>(w)) {}

  /// Several activation rows: block b's lines kGroupAhead on.
  template <int H>
  [[gnu::always_inline]] void prepare(int64_t b, bool several) const {
    if (several) simd::prefetch_lines_ahead(group_ + b, sizeof(Group), kGroupAhead);
  }
  [[gnu::always_inline]] __m256 scales(int64_t b, int h) const {
    return _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(group_[b].d + kRows * h)));
  }

 protected:
  [[gnu::always_inline]] __m256i quants(int64_t b, int s, int h) const {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(group_[b].qs[s][kRows * h]));
  }

 private:
  const Group* group_;
};

/// Activation rows per tile, for decode and prefill alike: the eight integer sums of four rows
/// and the step's registers fill the sixteen; the float accumulators wait in L1 between blocks.
/// MulMatPrefill/q4_0x16 on 2 Zen 5 threads, 2048 x 5632 by 512: avxvnni 3 rows 22, 4 rows 21,
/// 5 rows 21, 6 rows 29 ms; avx2 40, 33, 41, 51 ms.
constexpr int kMaxA = 4;

/// The packed path of a type whose tiles Rows reads, with levels of kind kLevels.
template <class Rows, Levels kLevels>
constexpr PackedDot packed_dot() {
  return {
      .max_w = kHalves * kRows,
      .max_a = kMaxA,
      .group = kBlock,
      .act_row_bytes = lanes::act_row_bytes,
      .pack = lanes::pack_act<level_offset(kLevels)>,
      .tile = dispatch<Tile<Rows, kLevels>, kHalves, kMaxA>,
  };
}

}  // namespace strata::cpu::STRATA_KERNEL_NS::lanes8

#endif  // STRATA_CPU_AVX2 && !STRATA_CPU_AVX512
