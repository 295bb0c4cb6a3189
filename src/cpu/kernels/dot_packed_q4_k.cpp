// Packed AVX-512 VNNI kernel for q4_k weights with q8_k activations: one weight row per int32
// lane (dot_lanes.h).
//
// A tile's rows are transposed super-block by super-block into sixteen-row halves: lane r of
// u[g] holds row r's quants of elements 4g..4g+3 (unsigned nibbles, which vpdpbusd takes as
// they are), and the sub-block scales and mins, d and dmin are unpacked to one value per lane.
// Per super-block, row and activation row:
//
//   sum  = sum over sub-blocks j of sc_j * (exact integer dot product of sub-block j)
//   mins = sum over j of m_j * (sum of the activations of sub-block j)       (vpdpwssd, exact)
//   acc  = fma(float(sum), d_w * d_a, acc);  acc = fma(-float(mins), dmin_w * d_a, acc)
//
// super-blocks in order. The same arithmetic whether the rows were transposed once into a
// panel serving every activation tile of a chunk (prefill) or super-block by super-block as
// they are read (decode), and whatever the tile shape: the outputs are the same bits.
#include <algorithm>
#include <cstring>

#include "core/blocks.h"
#include "core/float16.h"
#include "cpu/kernels/dot_k_packed.h"
#include "cpu/kernels/dot_lanes.h"
#include "cpu/kernels/dot_packed.h"
#include "cpu/kernels/simd.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

using core::BlockQ4_K;
using core::kQK_K;
using kquant::PackedQ8K;

#if defined(STRATA_CPU_AVX512)

using lanes::kRows;
constexpr int kHalves = 2;  ///< registers of weight rows per tile
// Four activation rows: 8 sub-block, 8 super-block and 8 float accumulators; each broadcast
// activation dword feeds two vpdpbusd.
constexpr int kMaxA = 4;
constexpr int kSteps = kQK_K / 4;  ///< vpdpbusd steps per super-block

/// One super-block of a tile's rows, transposed (half h: rows 16 h ..).
struct alignas(64) PanelSuper {
  uint8_t u[kSteps][kHalves][64];   ///< step g: elements 4g..4g+3 of each row, as bytes
  int32_t sc[8][kHalves][kRows];    ///< sub-block scales
  int32_t mins[4][kHalves][kRows];  ///< sub-block mins 2t and 2t + 1, as int16 pairs
  float d[kHalves][kRows];
  float dmin[kHalves][kRows];
};
static_assert(sizeof(PanelSuper) == 9984);

size_t panel_bytes(int64_t k) {
  return static_cast<size_t>(k / kQK_K) * sizeof(PanelSuper);
}

// Shifts in their zero-masked forms: GCC 12 flags the plain ones as maybe-uninitialized.
[[gnu::always_inline]] inline __m512i srl(__m512i v, unsigned n) {
  return _mm512_maskz_srli_epi32(0xffff, v, n);
}
[[gnu::always_inline]] inline __m512i sll(__m512i v, unsigned n) {
  return _mm512_maskz_slli_epi32(0xffff, v, n);
}

/// Transposes super-block i of sixteen rows (p: the first; nw of them exist) into half h.
/// With `ahead` set, also asks for the 36 lines from there, spread over the work.
[[gnu::always_inline]] inline void transpose_half(const uint8_t* p, const size_t (&offset)[kRows],
                                                  int64_t i, PanelSuper& out, int h,
                                                  const uint8_t* ahead = nullptr) {
  const uint8_t* base = p + static_cast<size_t>(i) * sizeof(BlockQ4_K);
  // The 16-byte head: d and dmin, then the 12 bytes of packed 6-bit scales and mins.
  __m512i head[4];
  lanes::transpose16x4(base, offset, head);
  const __m512i low16 = _mm512_set1_epi32(0xffff);
  const auto halves_to_f32 = [](__m512i words) {
    return _mm512_maskz_cvtph_ps(0xffff, _mm512_maskz_cvtepi32_epi16(0xffff, words));
  };
  _mm512_store_ps(out.d[h], halves_to_f32(_mm512_and_si512(head[0], low16)));
  _mm512_store_ps(out.dmin[h], halves_to_f32(srl(head[0], 16)));
  // Sub-block j < 4: scale = byte j & 63, min = byte j + 4 & 63. j = 4 + t: the low (scale) or
  // high (min) nibble of byte 8 + t, with the top two bits of byte t (scale) or 4 + t (min).
  const __m512i six = _mm512_set1_epi32(63), four = _mm512_set1_epi32(15),
                two = _mm512_set1_epi32(3);
  const __m512i s03 = head[1], m03 = head[2], hi = head[3];
  __m512i m[8];
  for (int t = 0; t < 4; ++t) {
    const __m512i sc = _mm512_and_si512(srl(s03, 8 * t), six);
    m[t] = _mm512_and_si512(srl(m03, 8 * t), six);
    const __m512i sc_hi = _mm512_or_si512(_mm512_and_si512(srl(hi, 8 * t), four),
                                          sll(_mm512_and_si512(srl(s03, 8 * t + 6), two), 4));
    m[4 + t] = _mm512_or_si512(_mm512_and_si512(srl(hi, 8 * t + 4), four),
                               sll(_mm512_and_si512(srl(m03, 8 * t + 6), two), 4));
    _mm512_store_si512(out.sc[t][h], sc);
    _mm512_store_si512(out.sc[4 + t][h], sc_hi);
  }
  for (int t = 0; t < 4; ++t) {
    _mm512_store_si512(out.mins[t][h], _mm512_or_si512(m[2 * t], sll(m[2 * t + 1], 16)));
  }
  // 32 quant bytes per 64 elements: the low nibbles are sub-block 2c, the high ones 2c + 1.
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  for (int c = 0; c < 4; ++c) {
    for (int e = 0; e < 2; ++e) {
      if (ahead != nullptr) {
        for (int l = 0; l < 5 && 5 * (2 * c + e) + l < 36; ++l) {
          simd::prefetch_stream(ahead + 64 * (5 * (2 * c + e) + l));
        }
      }
      __m512i t[4];
      lanes::transpose16x4(base + offsetof(BlockQ4_K, qs) + 32 * c + 16 * e, offset, t);
      for (int q = 0; q < 4; ++q) {
        const int g = 8 * (2 * c) + 4 * e + q;
        _mm512_store_si512(out.u[g][h], _mm512_and_si512(t[q], low4));
        _mm512_store_si512(out.u[g + 8][h], _mm512_and_si512(_mm512_srli_epi16(t[q], 4), low4));
      }
    }
  }
}

void pack_panel(int64_t k, const uint8_t* w, size_t ldw, int nw, uint8_t* panel) {
  auto* out = reinterpret_cast<PanelSuper*>(panel);
  for (int h = 0; h < kHalves && nw > kRows * h; ++h) {
    size_t offset[kRows];
    lanes::row_offsets(ldw, std::min(nw - kRows * h, kRows), offset);
    for (int64_t i = 0; i < k / kQK_K; ++i)
      transpose_half(w + kRows * h * ldw, offset, i, out[i], h);
  }
}

/// Adds super-block p (the activations' super-block `i`) to every output of the tile.
template <int H, int NA>
[[gnu::always_inline]] inline void add_super(const PanelSuper& p, const uint8_t* a, size_t lda,
                                             int64_t i, __m512 (&acc)[H][NA]) {
  const auto act = [&](int c) -> const PackedQ8K& {
    return reinterpret_cast<const PackedQ8K*>(a + c * lda)[i];
  };
  __m512i sum[H][NA];
  for (int h = 0; h < H; ++h) {
    for (int c = 0; c < NA; ++c) sum[h][c] = _mm512_setzero_si512();
  }
  for (int j = 0; j < 8; ++j) {
    __m512i sub[H][NA];
    for (int h = 0; h < H; ++h) {
      for (int c = 0; c < NA; ++c) sub[h][c] = _mm512_setzero_si512();
    }
    for (int s = 0; s < 8; ++s) {
      const int g = 8 * j + s;
      __m512i u[H];
      for (int h = 0; h < H; ++h) u[h] = _mm512_load_si512(p.u[g][h]);
      for (int c = 0; c < NA; ++c) {
        const __m512i y = lanes::broadcast4(act(c).qs + 4 * g);
        for (int h = 0; h < H; ++h) sub[h][c] = _mm512_dpbusd_epi32(sub[h][c], u[h], y);
      }
    }
    for (int h = 0; h < H; ++h) {
      const __m512i sc = _mm512_load_si512(p.sc[j][h]);
      for (int c = 0; c < NA; ++c) {
        sum[h][c] = _mm512_add_epi32(sum[h][c], _mm512_mullo_epi32(sub[h][c], sc));
      }
    }
  }
  for (int h = 0; h < H; ++h) {
    const __m512 d = _mm512_load_ps(p.d[h]), dmin = _mm512_load_ps(p.dmin[h]);
    for (int c = 0; c < NA; ++c) {
      __m512i mins = _mm512_setzero_si512();
      for (int t = 0; t < 4; ++t) {
        int32_t pair;
        std::memcpy(&pair, act(c).sums + 2 * t, sizeof pair);
        mins = _mm512_dpwssd_epi32(mins, _mm512_load_si512(p.mins[t][h]), _mm512_set1_epi32(pair));
      }
      const __m512 da = _mm512_set1_ps(act(c).d);
      acc[h][c] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xffff, sum[h][c]), _mm512_mul_ps(d, da),
                                  acc[h][c]);
      acc[h][c] = _mm512_fnmadd_ps(_mm512_maskz_cvtepi32_ps(0xffff, mins), _mm512_mul_ps(dmin, da),
                                   acc[h][c]);
    }
  }
}

// Prefill: the tile's rows already transposed into a panel.
struct Panel {
  template <int H, int NA>
  static void run(int64_t k, const uint8_t* w, size_t, int nw, const uint8_t* a, size_t lda,
                  float* out, int64_t ldo_w, int64_t ldo_a) {
    const auto* p = reinterpret_cast<const PanelSuper*>(w);
    __m512 acc[H][NA];
    for (int h = 0; h < H; ++h) {
      for (int c = 0; c < NA; ++c) acc[h][c] = _mm512_setzero_ps();
    }
    for (int64_t i = 0; i < k / kQK_K; ++i) add_super<H, NA>(p[i], a, lda, i, acc);
    lanes::store_rows<H, NA>(acc, nw, out, ldo_w, ldo_a);
  }
};

// Decode: each super-block of the tile's rows transposed into a local panel as it is read.
struct Plain {
  template <int H, int NA>
  static void run(int64_t k, const uint8_t* w, size_t ldw, int nw, const uint8_t* a, size_t lda,
                  float* out, int64_t ldo_w, int64_t ldo_a) {
    size_t offset[H][kRows];
    for (int h = 0; h < H; ++h) lanes::row_offsets(ldw, std::min(nw - kRows * h, kRows), offset[h]);
    // A later tile's rows, spread over transpose_half's work (simd::prefetch_tile_ahead).
    const uint8_t* next = simd::prefetch_origin(w, kHalves * kRows * ldw);
    constexpr size_t kStep = kHalves * kRows * sizeof(BlockQ4_K);
    alignas(64) PanelSuper local;
    __m512 acc[H][NA];
    for (int h = 0; h < H; ++h) {
      for (int c = 0; c < NA; ++c) acc[h][c] = _mm512_setzero_ps();
    }
    for (int64_t i = 0; i < k / kQK_K; ++i) {
      for (int h = 0; h < H; ++h) {
        const uint8_t* ahead = next + static_cast<size_t>(i) * kStep + kStep / 2 * h;
        transpose_half(w + kRows * h * ldw, offset[h], i, local, h, ahead);
      }
      add_super<H, NA>(local, a, lda, i, acc);
    }
    lanes::store_rows<H, NA>(acc, nw, out, ldo_w, ldo_a);
  }
};

#endif  // STRATA_CPU_AVX512

}  // namespace

#if defined(STRATA_CPU_AVX512)
const PackedDot kPackedQ4_K = {
    .max_w = kHalves * kRows,
    .max_a = kMaxA,
    .group = kQK_K,
    .act_row_bytes = kquant::packed_q8k_row_bytes,
    .pack = kquant::pack_q8k<false>,
    .tile = lanes::dispatch<Plain, kHalves, kMaxA>,
    .panel_bytes = panel_bytes,
    .pack_panel = pack_panel,
    .panel_tile = lanes::dispatch<Panel, kHalves, kMaxA>,
};
#endif

}  // namespace strata::cpu::STRATA_KERNEL_NS
