// Packed AVX-512 VNNI kernel for q4_0 weights with q8_0 activations: one weight row per int32
// lane (dot_lanes_q0.h has the row gathering and the panel, shared with q8_0).
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
#include <cstring>

#include "core/blocks.h"
#include "core/float16.h"
#include "cpu/kernels/dot_lanes_q0.h"
#include "cpu/kernels/dot_packed.h"
#include "cpu/kernels/quantize_act.h"
#include "cpu/kernels/simd.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

using core::BlockQ4_0;
using core::kQK8_0;

#if defined(STRATA_CPU_AVX512)

using lanes::kRows;
using lanes::PanelBlock;
using lanes::WeightBlock;
// Six activation rows: 12 integer and 12 float accumulators, twelve vpdpbusd chains in flight
// (enough to hide its latency at two per cycle), and each broadcast activation dword feeds two.
constexpr int kMaxA = 6;
using lanes::kBlock;

/// One activation block as the kernels read it: a cache line.
struct alignas(64) ActBlock {
  int8_t qs[32];
  int32_t corr;  ///< -8 * (sum of the 32 activations)
  float d;
  uint8_t pad[24];
};
static_assert(sizeof(ActBlock) == 64);

size_t act_row_bytes(int64_t k) {
  return static_cast<size_t>(k / kBlock) * sizeof(ActBlock);
}

void pack(const float* src, uint8_t* dst, int64_t k) {
  auto* out = reinterpret_cast<ActBlock*>(dst);
  for (int64_t i = 0; i < k / kBlock; ++i, src += kBlock, ++out) {
    core::BlockQ8_0 b;
    quantize_q8_0(src, &b, kBlock);
    std::memcpy(out->qs, b.qs, sizeof out->qs);
    int32_t sum = 0;
    for (int8_t q : b.qs) sum += q;
    out->corr = -8 * sum;
    out->d = core::half_to_float(b.d);
    std::memset(out->pad, 0, sizeof out->pad);
  }
}

/// The arithmetic every path shares: one block's exact sums times d_w * d_a, added.
[[gnu::always_inline]] inline void add_block(__m512& acc, __m512i sum, __m512 dw, float da) {
  const __m512 s = _mm512_mul_ps(dw, _mm512_set1_ps(da));
  acc = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xffff, sum), s, acc);
}

/// Sixteen q4_0 rows read in place. Rows past nw repeat the last one: their lanes compute
/// something finite that is never stored.
class Q4Rows {
 public:
  Q4Rows(int64_t k, const uint8_t* w, size_t ldw, int nw) : w_(w), blocks_(k / kQK8_0) {
    next_ = simd::prefetch_origin(w, kRows * ldw);
    lanes::row_offsets(ldw, nw, offset_);
  }

  [[gnu::always_inline]] void load(int64_t b, WeightBlock& o) const {
    const uint8_t* base = w_ + static_cast<size_t>(b) * sizeof(BlockQ4_0);
    if (b % kScalesPerLoad == 0) {
      Scales::load(base, offset_, blocks_ - b, scales_);
      simd::prefetch_tile_ahead<kScalesPerLoad * kRows * sizeof(BlockQ4_0)>(
          next_, static_cast<size_t>(b) * kRows * sizeof(BlockQ4_0));
    }
    __m512i t[4];
    lanes::transpose16x4(base + offsetof(BlockQ4_0, qs), offset_, t);
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    for (int j = 0; j < 4; ++j) {
      o.u[j] = _mm512_and_si512(t[j], low4);
      o.u[4 + j] = _mm512_and_si512(_mm512_srli_epi16(t[j], 4), low4);
    }
    o.dw = _mm512_load_ps(scales_[b % kScalesPerLoad]);
  }

 private:
  // Four 18-byte blocks' scales per 64-byte load (words 0, 9, 18, 27).
  static constexpr int kScalesPerLoad = 4;
  using Scales = lanes::ScaleTree<kScalesPerLoad, sizeof(BlockQ4_0) / 2>;

  const uint8_t* w_;
  const uint8_t* next_;
  int64_t blocks_;
  size_t offset_[kRows];
  alignas(64) mutable float scales_[kScalesPerLoad][kRows];
};

inline const ActBlock& act(const uint8_t* a, size_t lda, int c, int64_t b) {
  return reinterpret_cast<const ActBlock*>(a + c * lda)[b];
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
          const __m512i y = lanes::broadcast4(act(a, lda, c, b).qs + 4 * s);
          for (int h = 0; h < H; ++h) sum[h][c] = _mm512_dpbusd_epi32(sum[h][c], u[h], y);
        }
      }
      for (int h = 0; h < H; ++h) {
        const __m512 dw = _mm512_load_ps(p[b].dw[h]);
        for (int c = 0; c < NA; ++c) add_block(acc[h][c], sum[h][c], dw, act(a, lda, c, b).d);
      }
    }
    lanes::store_rows<H, NA>(acc, nw, out, ldo_w, ldo_a);
  }
};

// Decode: sixteen rows at a time, transposed in registers block by block (a tile's halves one
// after the other: each half asks for the next one's bytes as it reads its own).
struct PlainTile {
  template <int NA>
  static void run_half(int64_t k, const uint8_t* w, size_t ldw, int nw, const uint8_t* a,
                       size_t lda, float* out, int64_t ldo_w, int64_t ldo_a) {
    const Q4Rows rows(k, w, ldw, nw);
    __m512 acc[1][NA];
    for (int c = 0; c < NA; ++c) acc[0][c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < k / kBlock; ++b) {
      WeightBlock u;
      rows.load(b, u);
      __m512i sum[NA];
      for (int c = 0; c < NA; ++c) sum[c] = _mm512_set1_epi32(act(a, lda, c, b).corr);
      for (int s = 0; s < 8; ++s) {
        for (int c = 0; c < NA; ++c) {
          sum[c] =
              _mm512_dpbusd_epi32(sum[c], u.u[s], lanes::broadcast4(act(a, lda, c, b).qs + 4 * s));
        }
      }
      for (int c = 0; c < NA; ++c) add_block(acc[0][c], sum[c], u.dw, act(a, lda, c, b).d);
    }
    lanes::store_rows<1, NA>(acc, nw, out, ldo_w, ldo_a);
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

constexpr PackedDot kPackedQ4_0 = {
    .max_w = lanes::kHalves * kRows,
    .max_a = kMaxA,
    .group = kBlock,
    .act_row_bytes = act_row_bytes,
    .pack = pack,
    .tile = lanes::dispatch<PlainTile, lanes::kHalves, kMaxA>,
    .panel_bytes = lanes::panel_bytes,
    .pack_panel = lanes::pack_panel<Q4Rows>,
    .panel_tile = lanes::dispatch<PanelTile, lanes::kHalves, kMaxA>,
};

#endif  // STRATA_CPU_AVX512

}  // namespace

const PackedDot* packed_dot_q4_0(core::Type weight_type, int64_t k) {
#if defined(STRATA_CPU_AVX512)
  if (weight_type == core::Type::kQ4_0 && k % kQK8_0 == 0) {
    return &kPackedQ4_0;
  }
#else
  (void)weight_type;
  (void)k;
#endif
  return nullptr;
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
