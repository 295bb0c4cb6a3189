// What the one-row-per-lane kernels for the 32-element block types share (q4_0 in
// dot_packed_q4_0.cpp, q8_0 in dot_packed_q8_0.cpp): sixteen rows' blocks as registers of
// unsigned levels, one row per int32 lane (u = q + 8 for q4_0: the nibbles themselves;
// u = q ^ 0x80 = q + 128 for q8_0, since vpdpbusd wants unsigned weights), the scales of
// sixteen rows gathered from their blocks, and the panel a chunk's weight tile is rearranged
// into once for prefill. A kernel brings how it reads sixteen rows' block (its Rows class) and
// its own arithmetic.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/blocks.h"
#include "cpu/kernels/dot_lanes.h"

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

}  // namespace strata::cpu::STRATA_KERNEL_NS::lanes

#endif  // STRATA_CPU_AVX512
