// Packed AVX-512 VNNI kernel for q4_0 weights with q8_0 activations: one weight row per int32
// lane.
//
// Sixteen weight rows are transposed so that lane r of a register holds four consecutive
// quants of row r; one vpdpbusd against four activation bytes broadcast to every lane then
// advances all sixteen rows' dot products, and a block's eight of them leave each lane with
// the exact integer dot product of its row's block. So the float work per block and
// activation row is one convert, one multiply (d_w * d_a, exact: two f16 values) and one fused
// multiply-add for sixteen outputs at once, with no horizontal sum at the end. (Kernels that
// keep elements in lanes spend three float instructions per vpdpbusd instead of three per
// eight.)
//
// vpdpbusd wants unsigned weights: the quants are taken as the nibbles themselves (q + 8), and
// each packed activation block starts its lanes at -8 * (sum of its activations).
//
// Per row and block, in block order: acc = fma(float(exact block sum), d_w * d_a, acc). That
// is the whole arithmetic, whatever the tile shape and whether the sixteen rows were
// transposed on the fly (tile: decode, a few activation rows) or once into a panel that
// serves every activation tile of a chunk (panel_tile: prefill). Both give the same bits.
#include <algorithm>
#include <cstring>

#include "core/blocks.h"
#include "core/float16.h"
#include "cpu/kernels/dot_lanes.h"
#include "cpu/kernels/dot_packed.h"
#include "cpu/kernels/quantize_act.h"
#include "cpu/kernels/simd_int.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

using core::BlockQ4_0;
using core::BlockQ8_0;
using core::kQK8_0;

#if defined(STRATA_CPU_AVX512)

using lanes::kRows;
constexpr int kHalves = 2;  ///< registers of weight rows per tile
// Six activation rows: 12 integer and 12 float accumulators, twelve vpdpbusd chains in flight
// (enough to hide its latency at two per cycle), and each broadcast activation dword feeds two.
constexpr int kMaxA = 6;

/// One activation block as the kernel reads it: a cache line.
struct alignas(64) ActBlock {
  int8_t qs[32];
  int32_t corr;  ///< -8 * (sum of the 32 activations)
  float d;
  uint8_t pad[24];
};
static_assert(sizeof(ActBlock) == 64);

/// One block of a tile's weight rows, transposed: lane r of u[s][h] holds row 16 h + r's quants
/// of elements 4s..4s+3 as bytes 0..15; dw[h] holds the rows' scales.
struct alignas(64) PanelBlock {
  uint8_t u[8][kHalves][64];
  float dw[kHalves][kRows];
};
static_assert(sizeof(PanelBlock) == 1152);

size_t act_row_bytes(int64_t k) {
  return static_cast<size_t>(k / kQK8_0) * sizeof(ActBlock);
}

size_t panel_bytes(int64_t k) {
  return static_cast<size_t>(k / kQK8_0) * sizeof(PanelBlock);
}

void pack(const float* src, uint8_t* dst, int64_t k) {
  auto* out = reinterpret_cast<ActBlock*>(dst);
  for (int64_t i = 0; i < k / kQK8_0; ++i, src += kQK8_0, ++out) {
    BlockQ8_0 b;
    quantize_q8_0(src, &b, kQK8_0);
    std::memcpy(out->qs, b.qs, sizeof out->qs);
    int32_t sum = 0;
    for (int8_t q : b.qs) sum += q;
    out->corr = -8 * sum;
    out->d = core::half_to_float(b.d);
    std::memset(out->pad, 0, sizeof out->pad);
  }
}

/// One block of sixteen rows in registers.
struct WeightBlock {
  __m512i u[8];
  __m512 dw;
};

struct Index32w {
  alignas(64) uint16_t v[32];
};

inline __m512i load_index(const Index32w& x) {
  return _mm512_load_si512(x.v);
}

// The scales of four blocks of sixteen rows, from one 64-byte load per row (the words at 0,
// 9, 18 and 27), gathered by a tree of two-source word permutes: round 1 takes rows in pairs
// (word 2b + q: row q of the pair, block b), round 2 in fours (4b + q), round 3 in eights
// (8b + q), and round 4 lays out two blocks of sixteen rows (16 (b % 2) + row).
constexpr Index32w scales_round(int round, int half) {
  Index32w x{};
  if (round == 1) {
    for (int b = 0; b < 4; ++b) {
      for (int q = 0; q < 2; ++q) x.v[2 * b + q] = static_cast<uint16_t>(32 * q + 9 * b);
    }
  } else if (round < 4) {
    const int in = 1 << (round - 1);  // rows per input register
    for (int b = 0; b < 4; ++b) {
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
constexpr Index32w kScales1 = scales_round(1, 0);
constexpr Index32w kScales2 = scales_round(2, 0);
constexpr Index32w kScales3 = scales_round(3, 0);
constexpr Index32w kScales4Low = scales_round(4, 0);
constexpr Index32w kScales4High = scales_round(4, 1);

/// Sixteen q4_0 rows read in place. Rows past nw repeat the last one: their lanes compute
/// something finite that is never stored.
class PlainRows {
 public:
  PlainRows(int64_t k, const uint8_t* w, size_t ldw, int nw) : w_(w), blocks_(k / kQK8_0) {
    next_ = w + kRows * ldw;
    lanes::row_offsets(ldw, nw, offset_);
  }

  [[gnu::always_inline]] void load(int64_t b, WeightBlock& o) const {
    const uint8_t* base = w_ + static_cast<size_t>(b) * sizeof(BlockQ4_0);
    if (b % 4 == 0) {
      load_scales(base, b);
      // The next tile's rows (they follow these in memory), asked for in address order at
      // the pace this tile reads, so memory sees one sequential stream (see mul_mat.cpp).
      const uint8_t* next = next_ + static_cast<size_t>(b) * kRows * sizeof(BlockQ4_0);
      for (size_t i = 0; i < 4 * kRows * sizeof(BlockQ4_0); i += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(next + i), _MM_HINT_T0);
      }
    }
    __m512i t[4];
    lanes::transpose16x4(base + offsetof(BlockQ4_0, qs), offset_, t);
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    for (int j = 0; j < 4; ++j) {
      o.u[j] = _mm512_and_si512(t[j], low4);
      o.u[4 + j] = _mm512_and_si512(_mm512_srli_epi16(t[j], 4), low4);
    }
    o.dw = _mm512_load_ps(scales_[b % 4]);
  }

 private:
  // scales_[j]: the sixteen rows' scales of block b + j, b a multiple of 4. (A gather costs
  // more than the rest of a block's work on AMD Zen 5.)
  void load_scales(const uint8_t* base, int64_t b) const {
    const int64_t left = blocks_ - b;
    // Nothing past the row's last block is read.
    const __mmask64 mask = left >= 4 ? ~__mmask64{0} : (__mmask64{1} << (18 * left)) - 1;
    __m512i v[kRows];
    for (int r = 0; r < kRows; ++r) v[r] = _mm512_maskz_loadu_epi8(mask, base + offset_[r]);
    const Index32w* rounds[3] = {&kScales1, &kScales2, &kScales3};
    for (int round = 0, n = kRows; round < 3; ++round, n /= 2) {
      const __m512i index = load_index(*rounds[round]);
      for (int i = 0; i < n / 2; ++i) {
        v[i] = _mm512_permutex2var_epi16(v[2 * i], index, v[2 * i + 1]);
      }
    }
    const __m512i low = _mm512_permutex2var_epi16(v[0], load_index(kScales4Low), v[1]);
    const __m512i high = _mm512_permutex2var_epi16(v[0], load_index(kScales4High), v[1]);
    // (Zero-masked forms: GCC 12 flags the unmasked ones as maybe-uninitialized.)
    const auto to_f32 = [](__m512i words, int half) {
      const __m256i h = half == 0 ? _mm512_maskz_extracti64x4_epi64(0xff, words, 0)
                                  : _mm512_maskz_extracti64x4_epi64(0xff, words, 1);
      return _mm512_maskz_cvtph_ps(0xffff, h);
    };
    _mm512_store_ps(scales_[0], to_f32(low, 0));
    _mm512_store_ps(scales_[1], to_f32(low, 1));
    _mm512_store_ps(scales_[2], to_f32(high, 0));
    _mm512_store_ps(scales_[3], to_f32(high, 1));
  }

  const uint8_t* w_;
  const uint8_t* next_;
  int64_t blocks_;
  size_t offset_[kRows];
  alignas(64) mutable float scales_[4][kRows];
};

void pack_panel(int64_t k, const uint8_t* w, size_t ldw, int nw, uint8_t* panel) {
  auto* out = reinterpret_cast<PanelBlock*>(panel);
  for (int h = 0; h < kHalves && nw > kRows * h; ++h) {
    const PlainRows rows(k, w + kRows * h * ldw, ldw, std::min(nw - kRows * h, kRows));
    for (int64_t b = 0; b < k / kQK8_0; ++b) {
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
template <int H, int NA>
void run_panel(int64_t k, const PanelBlock* p, int nw, const uint8_t* a, size_t lda, float* out,
               int64_t ldo_w, int64_t ldo_a) {
  __m512 acc[H][NA];
  for (int h = 0; h < H; ++h) {
    for (int c = 0; c < NA; ++c) acc[h][c] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < k / kQK8_0; ++b) {
    __m512i sum[H][NA];
    for (int c = 0; c < NA; ++c) {
      const ActBlock& y = reinterpret_cast<const ActBlock*>(a + c * lda)[b];
      for (int h = 0; h < H; ++h) sum[h][c] = _mm512_set1_epi32(y.corr);
    }
    for (int s = 0; s < 8; ++s) {
      __m512i u[H];
      for (int h = 0; h < H; ++h) u[h] = _mm512_load_si512(p[b].u[s][h]);
      for (int c = 0; c < NA; ++c) {
        const __m512i y =
            lanes::broadcast4(reinterpret_cast<const ActBlock*>(a + c * lda)[b].qs + 4 * s);
        for (int h = 0; h < H; ++h) sum[h][c] = _mm512_dpbusd_epi32(sum[h][c], u[h], y);
      }
    }
    for (int h = 0; h < H; ++h) {
      const __m512 dw = _mm512_load_ps(p[b].dw[h]);
      for (int c = 0; c < NA; ++c) {
        add_block(acc[h][c], sum[h][c], dw, reinterpret_cast<const ActBlock*>(a + c * lda)[b].d);
      }
    }
  }
  lanes::store_rows<H, NA>(acc, nw, out, ldo_w, ldo_a);
}

// Decode: sixteen rows at a time, transposed in registers block by block (a tile's halves one
// after the other: each half asks for the next one's bytes as it reads its own).
template <int NA>
void run_plain(int64_t k, const uint8_t* w, size_t ldw, int nw, const uint8_t* a, size_t lda,
               float* out, int64_t ldo_w, int64_t ldo_a) {
  const PlainRows rows(k, w, ldw, nw);
  __m512 acc[1][NA];
  for (int c = 0; c < NA; ++c) acc[0][c] = _mm512_setzero_ps();
  for (int64_t b = 0; b < k / kQK8_0; ++b) {
    WeightBlock u;
    rows.load(b, u);
    __m512i sum[NA];
    for (int c = 0; c < NA; ++c) {
      sum[c] = _mm512_set1_epi32(reinterpret_cast<const ActBlock*>(a + c * lda)[b].corr);
    }
    for (int s = 0; s < 8; ++s) {
      for (int c = 0; c < NA; ++c) {
        const __m512i y =
            lanes::broadcast4(reinterpret_cast<const ActBlock*>(a + c * lda)[b].qs + 4 * s);
        sum[c] = _mm512_dpbusd_epi32(sum[c], u.u[s], y);
      }
    }
    for (int c = 0; c < NA; ++c) {
      add_block(acc[0][c], sum[c], u.dw, reinterpret_cast<const ActBlock*>(a + c * lda)[b].d);
    }
  }
  lanes::store_rows<1, NA>(acc, nw, out, ldo_w, ldo_a);
}

struct Plain {
  template <int H, int NA>
  static void run(int64_t k, const uint8_t* w, size_t ldw, int nw, const uint8_t* a, size_t lda,
                  float* out, int64_t ldo_w, int64_t ldo_a) {
    for (int h = 0; h < H; ++h) {
      run_plain<NA>(k, w + kRows * h * ldw, ldw, std::min(nw - kRows * h, kRows), a, lda,
                    out + kRows * h * ldo_w, ldo_w, ldo_a);
    }
  }
};

struct Panel {
  template <int H, int NA>
  static void run(int64_t k, const uint8_t* w, size_t, int nw, const uint8_t* a, size_t lda,
                  float* out, int64_t ldo_w, int64_t ldo_a) {
    run_panel<H, NA>(k, reinterpret_cast<const PanelBlock*>(w), nw, a, lda, out, ldo_w, ldo_a);
  }
};

constexpr PackedDot kPackedQ4_0 = {
    .max_w = kHalves * kRows,
    .max_a = kMaxA,
    .group = kQK8_0,
    .act_row_bytes = act_row_bytes,
    .pack = pack,
    .tile = lanes::dispatch<Plain, kHalves, kMaxA>,
    .panel_bytes = panel_bytes,
    .pack_panel = pack_panel,
    .panel_tile = lanes::dispatch<Panel, kHalves, kMaxA>,
};

#endif  // STRATA_CPU_AVX512

}  // namespace

const PackedDot* packed_dot_q4_0(core::Type weight_type, int64_t k) {
#if defined(STRATA_CPU_AVX512)
  // Row offsets are gathered as int32: sixteen rows must span less than 2 GiB.
  const size_t row = static_cast<size_t>(k / kQK8_0) * sizeof(BlockQ4_0);
  if (weight_type == core::Type::kQ4_0 && k % kQK8_0 == 0 && row < (size_t{1} << 26)) {
    return &kPackedQ4_0;
  }
#else
  (void)weight_type;
  (void)k;
#endif
  return nullptr;
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
