// What the one-row-per-lane kernels for the 32-element block types share (q4_0 in
// dot_packed_q4_0.cpp, q8_0 in dot_packed_q8_0.cpp): sixteen rows' blocks as registers of
// unsigned levels, one row per int32 lane (u = q + 8 for q4_0: the nibbles themselves;
// u = q ^ 0x80 = q + 128 for q8_0, since vpdpbusd wants unsigned weights), the scales of
// sixteen rows gathered from their blocks, the panel a chunk's weight tile is rearranged into
// once for prefill, and the arithmetic. A kernel brings how it reads sixteen rows' block (its
// Rows class) and the offset of its levels.
//
// Per row and block, in block order: acc = fma(float(exact block sum), d_w * d_a, acc). One
// vpdpbusd against four activation bytes broadcast to every lane advances sixteen rows' dot
// products, and a block's eight of them leave each lane with the exact integer dot product of
// its row's block, so the float work per block and activation row is one convert, one
// multiply (d_w * d_a, exact: two f16 values) and one fused multiply-add for sixteen outputs,
// with no horizontal sum. That is the whole arithmetic, whatever the tile shape and whether
// the rows were summed where they lie (LoneTile: decode's one activation row), transposed on
// the fly (PlainTile: a few activation rows) or once into a panel that serves every
// activation tile of a chunk (PanelTile: prefill): all give the same bits. (It is llama.cpp's order
// for weights it repacks, q4_0; its q8_0 kernel adds eight partial sums per block in eight lanes,
// three float instructions per vpdpbusd instead of three per eight, which halves prefill's speed.)
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/blocks.h"
#include "core/float16.h"
#include "cpu/kernels/dot_lanes.h"
#include "cpu/kernels/dot_lanes_act.h"
#include "cpu/kernels/dot_packed.h"
#include "cpu/kernels/quantize_act.h"

#if defined(STRATA_CPU_AVX512)

namespace strata::cpu::STRATA_KERNEL_NS::lanes {

constexpr int kHalves = 2;  ///< registers of weight rows per tile
constexpr int64_t kBlock = core::kQK8_0;

/// One block of a tile's weight rows, transposed: lane r of u[s][h] holds row 16 h + r's
/// unsigned levels of elements 4s..4s+3; dw[h] holds the rows' scales.
struct alignas(64) PanelBlock {
  uint8_t u[8][kHalves][64];
  float dw[kHalves][kRows];
};
static_assert(sizeof(PanelBlock) == 1152);

/// How far ahead of its reads decode for two or more activation rows asks for the lines of rows
/// regrouped at load (one stream; Rows::ask_ahead). A block's work then takes long enough that
/// the hardware prefetchers alone left the loads waiting on memory: tinyllama's 32000 x 5632
/// output matrix for 4 activation rows, 2 Zen 5 threads, took 3.6-4.9 ms without and 1.8-2.3 ms
/// with 8 KiB in q4_0x16 (2 KiB: 2.8-3.1; 16 and 32 KiB: as 8), 5.5-6.1 -> 4.5-4.8 ms in
/// q8_0x16. Decode's single row (lone_sums) reads fast enough without.
inline constexpr size_t kGroupAhead = 8 << 10;

/// One block of sixteen rows in registers.
struct WeightBlock {
  __m512i u[8];
  __m512 dw;
};

inline size_t panel_bytes(int64_t k) {
  return static_cast<size_t>(k / kBlock) * sizeof(PanelBlock);
}

struct Index32w {
  alignas(64) uint16_t v[32];
};

// The f16 scales of kLoad consecutive blocks of sixteen rows, from one 64-byte load per row
// (the scale of block b at word kStride * b), gathered by a tree of two-source word permutes:
// round 1 takes rows in pairs (word 2b + q: row q of the pair, block b), round 2 in fours
// (4b + q), round 3 in eights (8b + q), and round 4 lays out two blocks of sixteen rows
// (16 (b % 2) + row). A gather costs more than the rest of a block's work on AMD Zen 5.
template <int kLoad, int kStride>
class ScaleTree {
  static_assert(kLoad == 2 || kLoad == 4);
  static_assert(kStride * (kLoad - 1) < 32);

 public:
  /// Row r's scales of blocks b .. b + kLoad - 1 (`left` of them exist) at base + offset[r],
  /// as floats: out[j][r] for block b + j.
  [[gnu::always_inline]] static void load(const uint8_t* base, const size_t (&offset)[kRows],
                                          int64_t left, float (&out)[kLoad][kRows]) {
    // Nothing past the row's last block is read.
    constexpr int64_t kBlockBytes = 2 * kStride;
    const __mmask64 mask =
        left >= kLoad ? ~__mmask64{0} : (__mmask64{1} << (kBlockBytes * left)) - 1;
    __m512i v[kRows];
    for (int r = 0; r < kRows; ++r) v[r] = _mm512_maskz_loadu_epi8(mask, base + offset[r]);
    const Index32w* rounds[3] = {&kRound1, &kRound2, &kRound3};
    for (int round = 0, n = kRows; round < 3; ++round, n /= 2) {
      const __m512i index = _mm512_load_si512(rounds[round]->v);
      for (int i = 0; i < n / 2; ++i) {
        v[i] = _mm512_permutex2var_epi16(v[2 * i], index, v[2 * i + 1]);
      }
    }
    // (Zero-masked forms: GCC 12 flags the unmasked ones as maybe-uninitialized.)
    const auto to_f32 = [](__m512i words, int half) {
      const __m256i h = half == 0 ? _mm512_maskz_extracti64x4_epi64(0xff, words, 0)
                                  : _mm512_maskz_extracti64x4_epi64(0xff, words, 1);
      return _mm512_maskz_cvtph_ps(0xffff, h);
    };
    const __m512i low = _mm512_permutex2var_epi16(v[0], _mm512_load_si512(kRound4Low.v), v[1]);
    _mm512_store_ps(out[0], to_f32(low, 0));
    _mm512_store_ps(out[1], to_f32(low, 1));
    if constexpr (kLoad == 4) {
      const __m512i high = _mm512_permutex2var_epi16(v[0], _mm512_load_si512(kRound4High.v), v[1]);
      _mm512_store_ps(out[2], to_f32(high, 0));
      _mm512_store_ps(out[3], to_f32(high, 1));
    }
  }

 private:
  static constexpr Index32w round(int n, int half) {
    Index32w x{};
    if (n == 1) {
      for (int b = 0; b < kLoad; ++b) {
        for (int q = 0; q < 2; ++q) x.v[2 * b + q] = static_cast<uint16_t>(32 * q + kStride * b);
      }
    } else if (n < 4) {
      const int in = 1 << (n - 1);  // rows per input register
      for (int b = 0; b < kLoad; ++b) {
        for (int q = 0; q < 2 * in; ++q) {
          x.v[2 * in * b + q] = static_cast<uint16_t>(q < in ? in * b + q : 32 + in * b + q - in);
        }
      }
    } else {
      for (int bb = 0; bb < 2; ++bb) {
        const int b = 2 * half + bb;
        for (int q = 0; q < 16; ++q) {
          x.v[16 * bb + q] = static_cast<uint16_t>(q < 8 ? 8 * b + q : 32 + 8 * b + q - 8);
        }
      }
    }
    return x;
  }
  alignas(64) static constexpr Index32w kRound1 = round(1, 0);
  alignas(64) static constexpr Index32w kRound2 = round(2, 0);
  alignas(64) static constexpr Index32w kRound3 = round(3, 0);
  alignas(64) static constexpr Index32w kRound4Low = round(4, 0);
  alignas(64) static constexpr Index32w kRound4High = round(4, 1);
};

/// Up to two registers of sixteen rows rearranged into a panel by Rows (a type's reader).
template <class Rows>
void pack_panel(int64_t k, const uint8_t* w, size_t ldw, int nw, uint8_t* panel) {
  auto* out = reinterpret_cast<PanelBlock*>(panel);
  for (int h = 0; h < kHalves && nw > kRows * h; ++h) {
    const Rows rows(k, w + kRows * h * ldw, ldw, std::min(nw - kRows * h, kRows));
    for (int64_t b = 0; b < k / kBlock; ++b) {
      WeightBlock blk;
      rows.load(b, blk);
      for (int s = 0; s < 8; ++s) _mm512_store_si512(out[b].u[s][h], blk.u[s]);
      _mm512_store_ps(out[b].dw[h], blk.dw);
    }
  }
}

/// The arithmetic every path shares: one block's exact sums times d_w * d_a, added.
[[gnu::always_inline]] inline void add_block(__m512& acc, __m512i sum, __m512 dw, float da) {
  const __m512 s = _mm512_mul_ps(dw, _mm512_set1_ps(da));
  acc = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xffff, sum), s, acc);
}

// Prefill: both halves of the panel against each broadcast activation dword, so one broadcast
// feeds two vpdpbusd (loads, not arithmetic, bound this loop).
struct PanelTile {
  template <int H, int NA>
  static void run(int64_t k, const uint8_t* w, size_t, int nw, const uint8_t* a, size_t lda,
                  float* out, int64_t ldo_w, int64_t ldo_a) {
    const auto* p = reinterpret_cast<const PanelBlock*>(w);
    __m512 acc[H][NA];
    for (int h = 0; h < H; ++h) {
      for (int c = 0; c < NA; ++c) acc[h][c] = _mm512_setzero_ps();
    }
    for (int64_t b = 0; b < k / kBlock; ++b) {
      __m512i sum[H][NA];
      for (int c = 0; c < NA; ++c) {
        for (int h = 0; h < H; ++h) sum[h][c] = _mm512_set1_epi32(act(a, lda, c, b).corr);
      }
      for (int s = 0; s < 8; ++s) {
        __m512i u[H];
        for (int h = 0; h < H; ++h) u[h] = _mm512_load_si512(p[b].u[s][h]);
        for (int c = 0; c < NA; ++c) {
          const __m512i y = broadcast4(act(a, lda, c, b).qs + 4 * s);
          for (int h = 0; h < H; ++h) sum[h][c] = _mm512_dpbusd_epi32(sum[h][c], u[h], y);
        }
      }
      for (int h = 0; h < H; ++h) {
        const __m512 dw = _mm512_load_ps(p[b].dw[h]);
        for (int c = 0; c < NA; ++c) add_block(acc[h][c], sum[h][c], dw, act(a, lda, c, b).d);
      }
    }
    store_register_rows<kRows>(acc, nw, out, ldo_w, ldo_a);
  }
};

// Decode and small batches: sixteen rows at a time, transposed in registers block by block (a
// tile's halves one after the other: each half asks for the next one's bytes as it reads its
// own).
template <class Rows>
struct PlainTile {
  template <int NA>
  static void run_half(int64_t k, const uint8_t* w, size_t ldw, int nw, const uint8_t* a,
                       size_t lda, float* out, int64_t ldo_w, int64_t ldo_a) {
    const Rows rows(k, w, ldw, nw);
    __m512 acc[1][NA];
    for (int c = 0; c < NA; ++c) acc[0][c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < k / kBlock; ++b) {
      rows.ask_ahead(b);
      WeightBlock u;
      rows.load(b, u);
      __m512i sum[NA];
      for (int c = 0; c < NA; ++c) sum[c] = _mm512_set1_epi32(act(a, lda, c, b).corr);
      for (int s = 0; s < 8; ++s) {
        for (int c = 0; c < NA; ++c) {
          sum[c] = _mm512_dpbusd_epi32(sum[c], u.u[s], broadcast4(act(a, lda, c, b).qs + 4 * s));
        }
      }
      for (int c = 0; c < NA; ++c) add_block(acc[0][c], sum[c], u.dw, act(a, lda, c, b).d);
    }
    store_register_rows<kRows>(acc, nw, out, ldo_w, ldo_a);
  }

  template <int H, int NA>
  static void run(int64_t k, const uint8_t* w, size_t ldw, int nw, const uint8_t* a, size_t lda,
                  float* out, int64_t ldo_w, int64_t ldo_a) {
    for (int h = 0; h < H; ++h) {
      run_half<NA>(k, w + kRows * h * ldw, ldw, std::min(nw - kRows * h, kRows), a, lda,
                   out + kRows * h * ldo_w, ldo_w, ldo_a);
    }
  }
};

/// Per 128-bit lane: the sums of z[0]'s, z[1]'s, z[2]'s and z[3]'s four dwords there, in that
/// order, by a tree of in-lane unpacks (zero-masked forms: GCC 12 flags the unmasked ones as
/// maybe-uninitialized).
[[gnu::always_inline]] inline __m512i lane_sums4(const __m512i (&z)[4]) {
  // [a0 a1 a2 a3], [b0 ..] -> [a0+a2, b0+b2, a1+a3, b1+b3]
  __m512i t[2];
  for (int i = 0; i < 2; ++i) {
    t[i] = _mm512_add_epi32(_mm512_maskz_unpacklo_epi32(0xffff, z[2 * i], z[2 * i + 1]),
                            _mm512_maskz_unpackhi_epi32(0xffff, z[2 * i], z[2 * i + 1]));
  }
  return _mm512_add_epi32(_mm512_maskz_unpacklo_epi64(0xff, t[0], t[1]),
                          _mm512_maskz_unpackhi_epi64(0xff, t[0], t[1]));
}

// Decode's single activation row sums each row's blocks where they lie (Rows::lone_sums:
// vpdpbusd on rows side by side, then lane_sums4), with none of the transposes two or more
// activation rows share (PlainTile). Same bits: both sums are exact.
template <class Rows>
struct LoneTile {
  template <int H, int NA>
  static void run(int64_t k, const uint8_t* w, size_t ldw, int nw, const uint8_t* a, size_t lda,
                  float* out, int64_t ldo_w, int64_t ldo_a) {
    if constexpr (NA > 1) {
      PlainTile<Rows>::template run<H, NA>(k, w, ldw, nw, a, lda, out, ldo_w, ldo_a);
    } else {
      for (int h = 0; h < H; ++h) {
        lone_half(k, w + kRows * h * ldw, ldw, std::min(nw - kRows * h, kRows), a,
                  out + kRows * h * ldo_w, ldo_w);
      }
    }
  }

  static void lone_half(int64_t k, const uint8_t* w, size_t ldw, int nw, const uint8_t* a,
                        float* out, int64_t ldo_w) {
    const Rows rows(k, w, ldw, nw);
    __m512 acc[1][1] = {{_mm512_setzero_ps()}};
    for (int64_t b = 0; b < k / kBlock; ++b) {
      const ActBlock& x = act(a, 0, 0, b);
      const __m512 dw = rows.scales(b);
      const __m512i sum = _mm512_add_epi32(rows.lone_sums(b, x), _mm512_set1_epi32(x.corr));
      add_block(acc[0][0], sum, dw, x.d);
    }
    store_register_rows<kRows>(acc, nw, out, ldo_w, 0);
  }
};

// Six activation rows: 12 integer and 12 float accumulators, twelve vpdpbusd chains in flight
// (enough to hide its latency at two per cycle), and each broadcast activation dword feeds two.
constexpr int kMaxA = 6;

/// The packed path of a type whose sixteen rows Rows reads, with levels kOffset above the
/// values.
template <class Rows, int kOffset>
constexpr PackedDot packed_dot() {
  return {
      .max_w = kHalves * kRows,
      .max_a = kMaxA,
      .group = kBlock,
      .act_row_bytes = act_row_bytes,
      .pack = pack_act<kOffset>,
      .tile = dispatch<LoneTile<Rows>, kHalves, kMaxA>,
      .panel_bytes = panel_bytes,
      .pack_panel = pack_panel<Rows>,
      .panel_tile = dispatch<PanelTile, kHalves, kMaxA>,
  };
}

}  // namespace strata::cpu::STRATA_KERNEL_NS::lanes

#endif  // STRATA_CPU_AVX512
