// Packed AVX-512 VNNI kernel for q4_k weights with q8_k activations: one weight row per int32
// lane (dot_lanes.h).
//
// Lane r of u[g] holds row r's quants of elements 4g..4g+3 (unsigned nibbles, which vpdpbusd
// takes as they are), and the sub-block scales and mins, d and dmin are unpacked to one value
// per lane. Per super-block, row and activation row:
//
//   sum  = sum over sub-blocks j of sc_j * (exact integer dot product of sub-block j)
//   mins = sum over j of m_j * (sum of the activations of sub-block j)       (vpdpwssd, exact)
//   acc  = fma(float(sum), d_w * d_a, acc);  acc = fma(-float(mins), dmin_w * d_a, acc)
//
// super-blocks in order. The rows come either in GGUF's layout, transposed sixteen at a time
// super-block by super-block as they are read (decode) or once into a panel serving every
// activation tile of a chunk (prefill), or regrouped at load (q4_kx16,
// core/quants/interleave.h), where a super-block of sixteen rows is already in lanes. The
// same arithmetic whichever the source and the tile shape: the outputs are the same bits.
#include <algorithm>
#include <cstring>

#include "core/blocks.h"
#include "core/float16.h"
#include "core/quants/interleave.h"
#include "cpu/kernels/dot_k_packed.h"
#include "cpu/kernels/dot_lanes.h"
#include "cpu/kernels/dot_packed.h"
#include "cpu/kernels/dot_tile.h"
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

/// One super-block's scales of a tile's rows, one row per lane (half h: rows 16 h ..).
struct alignas(64) PanelScales {
  int32_t sc[8][kHalves][kRows];    ///< sub-block scales
  int32_t mins[4][kHalves][kRows];  ///< sub-block mins 2t and 2t + 1, as int16 pairs
  float d[kHalves][kRows];
  float dmin[kHalves][kRows];
};

/// One super-block of a tile's rows, transposed.
struct alignas(64) PanelSuper {
  uint8_t u[kSteps][kHalves][64];  ///< step g: elements 4g..4g+3 of each row, as bytes
  PanelScales s;
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

/// Unpacks sixteen rows' d and dmin and their 6-bit scales and mins (BlockQ4_K::scales' bytes
/// 0-3, 4-7 and 8-11 of row r in lane r of s03, m03 and hi) into half h.
[[gnu::always_inline]] inline void unpack_scales(__m512 d, __m512 dmin, __m512i s03, __m512i m03,
                                                 __m512i hi, PanelScales& out, int h) {
  _mm512_store_ps(out.d[h], d);
  _mm512_store_ps(out.dmin[h], dmin);
  // Sub-block j < 4: scale = byte j & 63, min = byte j + 4 & 63. j = 4 + t: the low (scale) or
  // high (min) nibble of byte 8 + t, with the top two bits of byte t (scale) or 4 + t (min).
  const __m512i six = _mm512_set1_epi32(63), four = _mm512_set1_epi32(15),
                two = _mm512_set1_epi32(3);
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
}

/// Steps g (low nibbles) and g + 8 (high nibbles) of sixteen rows from their quant bytes in
/// lanes: 32 bytes per 64 elements, the low nibbles of byte 32c + b being element 64c + b and
/// the high ones element 64c + 32 + b.
[[gnu::always_inline]] inline void store_steps(__m512i bytes, int g, int h, PanelSuper& out) {
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  _mm512_store_si512(out.u[g][h], _mm512_and_si512(bytes, low4));
  _mm512_store_si512(out.u[g + 8][h], _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low4));
}

/// The step of register s of a row's quant bytes in lanes (bytes 4s..4s+3 of each row).
constexpr int step_of(int s) {
  return 16 * (s / 8) + s % 8;
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
  unpack_scales(halves_to_f32(_mm512_and_si512(head[0], low16)), halves_to_f32(srl(head[0], 16)),
                head[1], head[2], head[3], out.s, h);
  for (int c = 0; c < 4; ++c) {
    for (int e = 0; e < 2; ++e) {
      if (ahead != nullptr) {
        for (int l = 0; l < 5 && 5 * (2 * c + e) + l < 36; ++l) {
          simd::prefetch_stream(ahead + 64 * (5 * (2 * c + e) + l));
        }
      }
      __m512i t[4];
      lanes::transpose16x4(base + offsetof(BlockQ4_K, qs) + 32 * c + 16 * e, offset, t);
      for (int q = 0; q < 4; ++q) store_steps(t[q], step_of(8 * c + 4 * e + q), h, out);
    }
  }
}

[[gnu::always_inline]] inline __m512i load_lanes(const uint8_t (&p)[kRows][4]) {
  return _mm512_loadu_si512(p);
}

/// Super-block b of a group of sixteen regrouped rows: its scales into half h.
[[gnu::always_inline]] inline void group_scales(const core::BlockQ4_Kx16& b, PanelScales& out,
                                                int h) {
  unpack_scales(simd::load_halves16(b.d), simd::load_halves16(b.dmin), load_lanes(b.scales[0]),
                load_lanes(b.scales[1]), load_lanes(b.scales[2]), out, h);
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

/// The panel of rows regrouped at load: a copy of their quants split into nibbles, and their
/// scales unpacked.
void pack_panel_grouped(int64_t k, const uint8_t* w, size_t ldw, int nw, uint8_t* panel) {
  auto* out = reinterpret_cast<PanelSuper*>(panel);
  for (int h = 0; h < kHalves && nw > kRows * h; ++h) {
    const auto* group = reinterpret_cast<const core::BlockQ4_Kx16*>(w + kRows * h * ldw);
    for (int64_t i = 0; i < k / kQK_K; ++i) {
      group_scales(group[i], out[i].s, h);
      for (int s = 0; s < 32; ++s) store_steps(load_lanes(group[i].qs[s]), step_of(s), h, out[i]);
    }
  }
}

/// A panel's quants: step g of half h is one aligned load.
struct PanelQuants {
  const PanelSuper& p;
  [[gnu::always_inline]] __m512i operator()(int g, int h) const {
    return _mm512_load_si512(p.u[g][h]);
  }
};

/// Super-block b of one group of regrouped rows (add_super's only half): step g is the low or
/// high nibbles of one load.
struct GroupQuants {
  const core::BlockQ4_Kx16& b;
  [[gnu::always_inline]] __m512i operator()(int g, int) const {
    const int s = 8 * (g / 16) + g % 8;
    const __m512i bytes = load_lanes(b.qs[s]);
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    return g % 16 < 8 ? _mm512_and_si512(bytes, low4)
                      : _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low4);
  }
};

/// acc += float(sum) d_w d_a - float(mins) dmin_w d_a, the scaled sums of one super-block.
template <int H, int NA, class Act>
[[gnu::always_inline]] inline void add_sums(const __m512i (&sum)[H][NA], const PanelScales& p,
                                            const Act& act, __m512 (&acc)[H][NA]) {
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

/// Adds one super-block (the activations' super-block `i`) to every output of the tile: its
/// quants by step and half from `quants`, its scales from `p`.
template <int H, int NA, class Quants>
[[gnu::always_inline]] inline void add_super(const Quants& quants, const PanelScales& p,
                                             const uint8_t* a, size_t lda, int64_t i,
                                             __m512 (&acc)[H][NA]) {
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
      for (int h = 0; h < H; ++h) u[h] = quants(g, h);
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
  add_sums<H, NA>(sum, p, act, acc);
}

/// Decode's single activation row against super-block b of one regrouped group (its scales in
/// half 0 of p): the eight sub-blocks' dot products as eight chains side by side, each load of
/// quants serving a low-nibble and a high-nibble sub-block. The sums are exact, so they equal
/// add_super's.
[[gnu::always_inline]] inline __m512i lone_sum(const core::BlockQ4_Kx16& b, const PanelScales& p,
                                               const PackedQ8K& x) {
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  __m512i sub[8];
  for (__m512i& v : sub) v = _mm512_setzero_si512();
#pragma GCC unroll 8
  for (int s = 0; s < 8; ++s) {
    for (int c = 0; c < 4; ++c) {
      const __m512i bytes = load_lanes(b.qs[8 * c + s]);
      sub[2 * c] = _mm512_dpbusd_epi32(sub[2 * c], _mm512_and_si512(bytes, low4),
                                       lanes::broadcast4(x.qs + 4 * (16 * c + s)));
      sub[2 * c + 1] =
          _mm512_dpbusd_epi32(sub[2 * c + 1], _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low4),
                              lanes::broadcast4(x.qs + 4 * (16 * c + 8 + s)));
    }
  }
  __m512i sum = _mm512_setzero_si512();
  for (int j = 0; j < 8; ++j) {
    sum = _mm512_add_epi32(sum, _mm512_mullo_epi32(sub[j], _mm512_load_si512(p.sc[j][0])));
  }
  return sum;
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
    for (int64_t i = 0; i < k / kQK_K; ++i)
      add_super<H, NA>(PanelQuants{p[i]}, p[i].s, a, lda, i, acc);
    store_register_rows<kRows>(acc, nw, out, ldo_w, ldo_a);
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
      add_super<H, NA>(PanelQuants{local}, local.s, a, lda, i, acc);
    }
    store_register_rows<kRows>(acc, nw, out, ldo_w, ldo_a);
  }
};

// Rows regrouped at load: only the scales are unpacked; the quants are read where they lie.
struct Grouped {
  /// How far ahead of its reads decode asks for a group's lines. Though the group is one
  /// stream, the hardware prefetchers alone kept the kernel's work and memory's latency from
  /// overlapping: tinyllama q4_k_m tg64 on 2 Zen 5 threads, alternated three times, 45-53 t/s
  /// without, 60-75 with anything from 1152 bytes to 16 KiB ahead (32 KiB: no gain); one
  /// thread 31-32 -> 35-41. Two or four sequences a step (several activation rows): 65-66 ->
  /// 71-72 and 92-99 -> 96-98 t/s.
  static constexpr size_t kAhead = 2 * sizeof(core::BlockQ4_Kx16);

  /// Decode's single activation row against the sixteen rows of one group.
  static void lone_group(int64_t k, const core::BlockQ4_Kx16* group, const PackedQ8K* x, float* out,
                         int64_t ldo_w) {
    alignas(64) PanelScales scales;
    __m512 acc[1][1] = {{_mm512_setzero_ps()}};
    for (int64_t i = 0; i < k / kQK_K; ++i) {
      simd::prefetch_lines_ahead(group + i, sizeof(group[i]), kAhead);
      group_scales(group[i], scales, 0);
      const __m512i sum[1][1] = {{lone_sum(group[i], scales, x[i])}};
      add_sums<1, 1>(
          sum, scales, [&](int) -> const PackedQ8K& { return x[i]; }, acc);
    }
    store_register_rows<kRows>(acc, kRows, out, ldo_w, 0);
  }

  /// NA activation rows (two or more sequences decoding) against one group's nw rows.
  template <int NA>
  static void group_rows(int64_t k, const core::BlockQ4_Kx16* group, int nw, const uint8_t* a,
                         size_t lda, float* out, int64_t ldo_w, int64_t ldo_a) {
    alignas(64) PanelScales scales;
    __m512 acc[1][NA];
    for (int c = 0; c < NA; ++c) acc[0][c] = _mm512_setzero_ps();
    for (int64_t i = 0; i < k / kQK_K; ++i) {
      simd::prefetch_lines_ahead(group + i, sizeof(group[i]), kAhead);
      group_scales(group[i], scales, 0);
      add_super<1, NA>(GroupQuants{group[i]}, scales, a, lda, i, acc);
    }
    store_register_rows<kRows>(acc, nw, out, ldo_w, ldo_a);
  }

  /// The groups one after the other, each one stream. Two read side by side, as prefill's
  /// panels are, left one Zen 5 core reading memory at 18 GB/s against 25 one after the other
  /// (one activation row); with four activation rows, 32000 x 5632 took 3.2-4.7 ms side by
  /// side against 2.1-3.0 ms (2 threads), and tinyllama q4_k_m decoding 4 sequences went from
  /// 126.6 to 177.1 t/s (2 sequences 81.4 -> 108.2; medians of 12 alternated runs).
  template <int H, int NA>
  static void run(int64_t k, const uint8_t* w, size_t ldw, int nw, const uint8_t* a, size_t lda,
                  float* out, int64_t ldo_w, int64_t ldo_a) {
    for (int h = 0; h < H; ++h) {
      const auto* group = reinterpret_cast<const core::BlockQ4_Kx16*>(w + kRows * h * ldw);
      float* group_out = out + kRows * h * ldo_w;
      if constexpr (NA == 1) {
        lone_group(k, group, reinterpret_cast<const PackedQ8K*>(a), group_out, ldo_w);
      } else {
        group_rows<NA>(k, group, std::min(nw - kRows * h, kRows), a, lda, group_out, ldo_w, ldo_a);
      }
    }
  }
};

/// The packed path whose tile reads rows as Rows does (in place or regrouped) and whose
/// panels `fill_panel` writes; the activations and the panel's arithmetic are the same for both.
template <class Rows>
constexpr PackedDot packed_q4_k(void (*fill_panel)(int64_t, const uint8_t*, size_t, int,
                                                   uint8_t*)) {
  return {
      .max_w = kHalves * kRows,
      .max_a = kMaxA,
      .group = kQK_K,
      .act_row_bytes = kquant::packed_q8k_row_bytes,
      .pack = kquant::pack_q8k<false>,
      .tile = lanes::dispatch<Rows, kHalves, kMaxA>,
      .panel_bytes = panel_bytes,
      .pack_panel = fill_panel,
      .panel_tile = lanes::dispatch<Panel, kHalves, kMaxA>,
  };
}

#endif  // STRATA_CPU_AVX512

}  // namespace

#if defined(STRATA_CPU_AVX512)
const PackedDot kPackedQ4_K = packed_q4_k<Plain>(pack_panel);
const PackedDot kPackedQ4_Kx16 = packed_q4_k<Grouped>(pack_panel_grouped);
#endif

}  // namespace strata::cpu::STRATA_KERNEL_NS
