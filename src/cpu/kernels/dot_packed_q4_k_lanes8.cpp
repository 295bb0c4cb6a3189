// Packed kernel for q4_k weights with q8_k activations in 256-bit registers, for the kernel sets
// without AVX-512 VNNI (dot_lanes8.h): dot_packed_q4_k.cpp's arithmetic, one weight row per int32
// lane, eight rows per register. Per super-block, row and activation row:
//
//   sum  = sum over sub-blocks j of sc_j * (exact integer dot product of sub-block j)
//   mins = sum over j of m_j * (sum of the activations of sub-block j)
//   acc  = fma(float(sum), d_w * d_a, acc);  acc = fma(-float(mins), dmin_w * d_a, acc)
//
// super-blocks in order: the 512-bit kernel's operations lane for lane, so every set gives the
// same bits. With VNNI a sub-block's sums are vpdpbusd's, scaled by vpmulld; without it they
// are vpmaddubsw's int16 pairs summed over the sub-block (at most 8 * 2 * 15 * 128 < 2^15),
// scaled by one vpmaddwd against the scale in both halves of each lane.
//
// Where the rows come from:
// - prefill: a panel, the tile's rows transposed once (GGUF's layout) or split into nibbles
//   (rows regrouped at load, q4_kx16) for every activation tile of a chunk;
// - decode of regrouped rows: their quants where they lie, a register of rows a load;
// - decode of rows in place (--no-repack, shards, streamed layers, experts): one activation row
//   reads each weight row on its own and sums lanes across rows (the integer sums are exact, so
//   they equal the lanes'); several activation rows transpose each super-block as they read it.
#include <algorithm>
#include <cstring>

#include "core/blocks.h"
#include "core/quants/interleave.h"
#include "cpu/kernels/dot_k_packed.h"
#include "cpu/kernels/dot_lanes8.h"
#include "cpu/kernels/dot_tile.h"
#include "cpu/kernels/simd.h"
#include "cpu/kernels/simd_int.h"

#if defined(STRATA_CPU_LANES8)

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

using core::BlockQ4_K;
using core::BlockQ4_Kx16;
using core::kQK_K;
using kquant::PackedQ8K;
using lanes8::kHalves;
using lanes8::kRows;

constexpr int kSteps = kQK_K / 4;  ///< four-element steps per super-block
/// Three activation rows: six sub-block sums, six super-block sums and a step's two registers of
/// rows and broadcast activations fill the sixteen registers.
constexpr int kMaxA = 3;

/// One super-block's scales of a tile's rows, one row per lane (half h: rows 8 h ..).
struct alignas(32) Scales {
  int32_t sc[8][kHalves][kRows];    ///< sub-block scales, as SubSums::scaled takes them
  int32_t mins[4][kHalves][kRows];  ///< sub-block mins 2t and 2t + 1, as int16 pairs
  float d[kHalves][kRows];
  float dmin[kHalves][kRows];
};

/// One super-block of a tile's rows, transposed and split into nibbles.
struct alignas(64) Super {
  uint8_t u[kSteps][kHalves][32];  ///< step g: elements 4g..4g+3 of each row, as bytes
  Scales s;
};
static_assert(sizeof(Super) == 4992);

size_t panel_bytes(int64_t k) {
  return static_cast<size_t>(k / kQK_K) * sizeof(Super);
}

[[gnu::always_inline]] inline __m256i load(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}
[[gnu::always_inline]] inline __m256i load_aligned(const void* p) {
  return _mm256_load_si256(static_cast<const __m256i*>(p));
}
[[gnu::always_inline]] inline void store(void* p, __m256i v) {
  _mm256_store_si256(static_cast<__m256i*>(p), v);
}

/// One sub-block's exact dot products, eight rows side by side.
struct SubSums {
  __m256i v = _mm256_setzero_si256();
#if defined(STRATA_CPU_VNNI)
  [[gnu::always_inline]] void add(__m256i u, __m256i y) {
    v = simd::dpbusd(v, u, y);
  }
  /// The sums times the scales sc (Scales::sc's form).
  [[gnu::always_inline]] __m256i scaled(__m256i sc) const {
    return _mm256_mullo_epi32(v, sc);
  }
#else
  [[gnu::always_inline]] void add(__m256i u, __m256i y) {
    v = _mm256_add_epi16(v, _mm256_maddubs_epi16(u, y));
  }
  [[gnu::always_inline]] __m256i scaled(__m256i sc) const {
    return _mm256_madd_epi16(v, sc);
  }
#endif
};

/// A sub-block scale in Scales::sc's form: as it is with VNNI, else in both int16 halves.
[[gnu::always_inline]] inline __m256i scale_form(__m256i sc) {
#if defined(STRATA_CPU_VNNI)
  return sc;
#else
  return _mm256_or_si256(sc, _mm256_slli_epi32(sc, 16));
#endif
}

/// A stored scale (Scales::sc) in both int16 halves of a lane, for vpmaddwd.
[[gnu::always_inline]] inline int32_t scale_pair(int32_t stored) {
#if defined(STRATA_CPU_VNNI)
  return stored * 0x10001;
#else
  return stored;
#endif
}

/// Unpacks eight rows' d and dmin and their 6-bit scales and mins (BlockQ4_K::scales' bytes 0-3,
/// 4-7 and 8-11 of row r in lane r of s03, m03 and hi) into half h.
[[gnu::always_inline]] inline void unpack_scales(__m256 d, __m256 dmin, __m256i s03, __m256i m03,
                                                 __m256i hi, Scales& out, int h) {
  _mm256_store_ps(out.d[h], d);
  _mm256_store_ps(out.dmin[h], dmin);
  // Sub-block j < 4: scale = byte j & 63, min = byte j + 4 & 63. j = 4 + t: the low (scale) or
  // high (min) nibble of byte 8 + t, with the top two bits of byte t (scale) or 4 + t (min).
  const __m256i six = _mm256_set1_epi32(63), four = _mm256_set1_epi32(15),
                two = _mm256_set1_epi32(3);
  __m256i m[8];
  for (int t = 0; t < 4; ++t) {
    const __m256i sc = _mm256_and_si256(_mm256_srli_epi32(s03, 8 * t), six);
    m[t] = _mm256_and_si256(_mm256_srli_epi32(m03, 8 * t), six);
    const __m256i sc_hi = _mm256_or_si256(
        _mm256_and_si256(_mm256_srli_epi32(hi, 8 * t), four),
        _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(s03, 8 * t + 6), two), 4));
    m[4 + t] = _mm256_or_si256(
        _mm256_and_si256(_mm256_srli_epi32(hi, 8 * t + 4), four),
        _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(m03, 8 * t + 6), two), 4));
    store(out.sc[t][h], scale_form(sc));
    store(out.sc[4 + t][h], scale_form(sc_hi));
  }
  for (int t = 0; t < 4; ++t) {
    store(out.mins[t][h], _mm256_or_si256(m[2 * t], _mm256_slli_epi32(m[2 * t + 1], 16)));
  }
}

/// Steps g (low nibbles) and g + 8 (high nibbles) of eight rows from their quant bytes in lanes:
/// the low nibbles of byte 32c + b are element 64c + b, the high ones element 64c + 32 + b.
[[gnu::always_inline]] inline void store_steps(__m256i bytes, int g, int h, Super& out) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  store(out.u[g][h], _mm256_and_si256(bytes, low4));
  store(out.u[g + 8][h], _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low4));
}

/// The step of dword s of a row's quant bytes (bytes 4s..4s+3), low nibbles.
constexpr int step_of(int s) {
  return 16 * (s / 8) + s % 8;
}

/// Super-block b of a group of sixteen regrouped rows: half h's scales.
[[gnu::always_inline]] inline void group_scales(const BlockQ4_Kx16& b, Scales& out, int h) {
  const auto halves = [&](const core::Half* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kRows * h)));
  };
  unpack_scales(halves(b.d), halves(b.dmin), load(b.scales[0][kRows * h]),
                load(b.scales[1][kRows * h]), load(b.scales[2][kRows * h]), out, h);
}

/// Rows in GGUF's layout: super-block i of register h's rows transposed into `out`.
class PlainQ4K : public lanes8::RowsInPlace<BlockQ4_K> {
 public:
  using RowsInPlace::ask_ahead;
  using RowsInPlace::RowsInPlace;

  /// Half h's d, dmin, scales and mins of super-block i.
  [[gnu::always_inline]] void scales(int64_t i, int h, Scales& out) const {
    __m256i head[4];
    transpose8x4(block_bytes(i), h, head);
    // Dword 0 of a row is d (low half) and dmin: gather the halves, d's then dmin's, per lane.
    const __m256i pick = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15, 0,
                                          1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
    const __m256i halves = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(head[0], pick), 0b11011000);
    unpack_scales(_mm256_cvtph_ps(_mm256_castsi256_si128(halves)),
                  _mm256_cvtph_ps(_mm256_extracti128_si256(halves, 1)), head[1], head[2], head[3],
                  out, h);
  }

  /// Half h's quants of super-block i, split into nibbles.
  [[gnu::always_inline]] void quants(int64_t i, int h, Super& out) const {
    const uint8_t* qs = block_bytes(i) + offsetof(BlockQ4_K, qs);
    for (int piece = 0; piece < 8; ++piece) {
      __m256i t[4];
      transpose8x4(qs + 16 * piece, h, t);
      for (int q = 0; q < 4; ++q) store_steps(t[q], step_of(4 * piece + q), h, out);
    }
  }

  /// Row 8 h + r's super-block i (rows past nw repeat the last).
  [[gnu::always_inline]] const BlockQ4_K& row(int64_t i, int h, int r) const {
    return block(i, kRows * h + r);
  }

  /// The next tile's super-block i of row 8 h + r, for decode reading the rows one by one: a
  /// super-block's 36 lines asked at once (ask_ahead) would fill the core's miss buffers.
  [[gnu::always_inline]] void ask_row_ahead(int64_t i, int h, int r) const {
    const uint8_t* next = ahead(i) + sizeof(BlockQ4_K) * (kRows * h + r);
    for (int l = 0; l < 3; ++l) simd::prefetch_stream(next + 64 * l);
  }
};

void pack_panel(int64_t k, const uint8_t* w, size_t ldw, int nw, uint8_t* panel) {
  auto* out = reinterpret_cast<Super*>(panel);
  const PlainQ4K rows(k, w, ldw, nw);
  for (int h = 0; h < kHalves && nw > kRows * h; ++h) {
    for (int64_t i = 0; i < k / kQK_K; ++i) {
      rows.scales(i, h, out[i].s);
      rows.quants(i, h, out[i]);
    }
  }
}

/// The panel of a regrouped group: its quants split into nibbles, its scales unpacked.
void pack_panel_grouped(int64_t k, const uint8_t* w, size_t, int nw, uint8_t* panel) {
  auto* out = reinterpret_cast<Super*>(panel);
  const auto* group = reinterpret_cast<const BlockQ4_Kx16*>(w);
  for (int h = 0; h < kHalves && nw > kRows * h; ++h) {
    for (int64_t i = 0; i < k / kQK_K; ++i) {
      group_scales(group[i], out[i].s, h);
      for (int s = 0; s < 32; ++s)
        store_steps(load(group[i].qs[s][kRows * h]), step_of(s), h, out[i]);
    }
  }
}

/// A panel's quants: step g of half h is one aligned load.
struct PanelQuants {
  const Super& p;
  [[gnu::always_inline]] __m256i operator()(int g, int h) const { return load_aligned(p.u[g][h]); }
};

/// A regrouped group's quants where they lie: step g is the low or high nibbles of one load.
struct GroupQuants {
  const BlockQ4_Kx16& b;
  [[gnu::always_inline]] __m256i operator()(int g, int h) const {
    const int s = 8 * (g / 16) + g % 8;
    const __m256i bytes = load(b.qs[s][kRows * h]);
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    return g % 16 < 8 ? _mm256_and_si256(bytes, low4)
                      : _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low4);
  }
};

[[gnu::always_inline]] inline const PackedQ8K& act(const uint8_t* a, size_t lda, int c, int64_t i) {
  return reinterpret_cast<const PackedQ8K*>(a + c * lda)[i];
}

/// acc += float(sum) d_w d_a - float(mins) dmin_w d_a for half h's rows and activation row c.
[[gnu::always_inline]] inline void add_sums(__m256i sum, const Scales& p, int h, const PackedQ8K& x,
                                            __m256& acc) {
  __m256i mins = _mm256_setzero_si256();
  for (int t = 0; t < 4; ++t) {
    int32_t pair;
    std::memcpy(&pair, x.sums + 2 * t, sizeof pair);
    mins = simd::madd_acc(mins, load_aligned(p.mins[t][h]), _mm256_set1_epi32(pair));
  }
  const __m256 da = _mm256_set1_ps(x.d);
  acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(_mm256_load_ps(p.d[h]), da), acc);
  acc =
      _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mins), _mm256_mul_ps(_mm256_load_ps(p.dmin[h]), da), acc);
}

/// Adds the activations' super-block i to every output of the tile: its quants by step and half
/// from `quants`, its scales from `p`.
template <int H, int NA, class Quants>
[[gnu::always_inline]] inline void add_super(const Quants& quants, const Scales& p,
                                             const uint8_t* a, size_t lda, int64_t i,
                                             __m256 (&acc)[H][NA]) {
  __m256i sum[H][NA];
  for (int h = 0; h < H; ++h) {
    for (int c = 0; c < NA; ++c) sum[h][c] = _mm256_setzero_si256();
  }
  for (int j = 0; j < 8; ++j) {
    SubSums sub[H][NA];
    for (int s = 0; s < 8; ++s) {
      const int g = 8 * j + s;
      __m256i u[H];
      for (int h = 0; h < H; ++h) u[h] = quants(g, h);
      for (int c = 0; c < NA; ++c) {
        const __m256i y = _mm256_set1_epi32(lanes::act_dword(act(a, lda, c, i).qs + 4 * g));
        for (int h = 0; h < H; ++h) sub[h][c].add(u[h], y);
      }
    }
    for (int h = 0; h < H; ++h) {
      const __m256i sc = load_aligned(p.sc[j][h]);
      for (int c = 0; c < NA; ++c) sum[h][c] = _mm256_add_epi32(sum[h][c], sub[h][c].scaled(sc));
    }
  }
  for (int h = 0; h < H; ++h) {
    for (int c = 0; c < NA; ++c) add_sums(sum[h][c], p, h, act(a, lda, c, i), acc[h][c]);
  }
}

template <int H, int NA>
void zero(__m256 (&acc)[H][NA]) {
  for (int h = 0; h < H; ++h) {
    for (int c = 0; c < NA; ++c) acc[h][c] = _mm256_setzero_ps();
  }
}

// Prefill: the tile's rows already in a panel.
struct Panel {
  template <int H, int NA>
  static void run(int64_t k, const uint8_t* w, size_t, int nw, const uint8_t* a, size_t lda,
                  float* out, int64_t ldo_w, int64_t ldo_a) {
    const auto* p = reinterpret_cast<const Super*>(w);
    __m256 acc[H][NA];
    zero(acc);
    for (int64_t i = 0; i < k / kQK_K; ++i)
      add_super<H, NA>(PanelQuants{p[i]}, p[i].s, a, lda, i, acc);
    store_register_rows<kRows>(acc, nw, out, ldo_w, ldo_a);
  }
};

/// One row's super-block against one activation super-block: lanes whose total is
/// sum over j of sc_j (sub-block j's exact dot product), sc_j being lane r of half h of p.
[[gnu::always_inline]] inline __m256i row_partials(const BlockQ4_K& b, const PackedQ8K& x,
                                                   const Scales& p, int h, int r) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  __m256i t = _mm256_setzero_si256();
  for (int c = 0; c < 4; ++c) {
    const __m256i bytes = load(b.qs + 32 * c);
    const __m256i lo = _mm256_and_si256(bytes, low4);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low4);
    // Pairs of at most 2 * 15 * 128: vpmaddubsw does not saturate.
    t = _mm256_add_epi32(t, _mm256_madd_epi16(_mm256_maddubs_epi16(lo, load(x.qs + 64 * c)),
                                              _mm256_set1_epi32(scale_pair(p.sc[2 * c][h][r]))));
    t = _mm256_add_epi32(t,
                         _mm256_madd_epi16(_mm256_maddubs_epi16(hi, load(x.qs + 64 * c + 32)),
                                           _mm256_set1_epi32(scale_pair(p.sc[2 * c + 1][h][r]))));
  }
  return t;
}

// Decode of rows in GGUF's layout.
struct Plain {
  /// One activation row: each row's sums across lanes, then the lanes' float work.
  template <int H>
  static void lone(int64_t k, const PlainQ4K& rows, const PackedQ8K* x, __m256 (&acc)[H][1]) {
    alignas(32) Scales p;
    for (int64_t i = 0; i < k / kQK_K; ++i) {
      for (int h = 0; h < H; ++h) {
        rows.scales(i, h, p);
        __m256i t[kRows];
        for (int r = 0; r < kRows; ++r) {
          rows.ask_row_ahead(i, h, r);
          t[r] = row_partials(rows.row(i, h, r), x[i], p, h, r);
        }
        add_sums(lanes8::sum_lanes8(t), p, h, x[i], acc[h][0]);
      }
    }
  }

  template <int H, int NA>
  static void run(int64_t k, const uint8_t* w, size_t ldw, int nw, const uint8_t* a, size_t lda,
                  float* out, int64_t ldo_w, int64_t ldo_a) {
    const PlainQ4K rows(k, w, ldw, nw);
    __m256 acc[H][NA];
    zero(acc);
    if constexpr (NA == 1) {
      lone<H>(k, rows, reinterpret_cast<const PackedQ8K*>(a), acc);
    } else {
      alignas(64) Super local;
      for (int64_t i = 0; i < k / kQK_K; ++i) {
        rows.ask_ahead(i);
        for (int h = 0; h < H; ++h) {
          rows.scales(i, h, local.s);
          rows.quants(i, h, local);
        }
        add_super<H, NA>(PanelQuants{local}, local.s, a, lda, i, acc);
      }
    }
    store_register_rows<kRows>(acc, nw, out, ldo_w, ldo_a);
  }
};

// Decode of rows regrouped at load: the scales unpacked, the quants read where they lie.
struct Grouped {
  /// One activation row against super-block b: each load of quants serves a low-nibble and a
  /// high-nibble sub-block, and each broadcast activation dword both registers of rows, so
  /// sub-blocks 2c and 2c + 1 of every register go side by side (four chains). The sums are
  /// exact, so they equal add_super's.
  template <int H>
  [[gnu::always_inline]] static void lone_sums(const BlockQ4_Kx16& b, const Scales& p,
                                               const PackedQ8K& x, __m256i (&sum)[H]) {
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    for (int h = 0; h < H; ++h) sum[h] = _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {
      SubSums lo[H], hi[H];
      for (int s = 0; s < 8; ++s) {
        const __m256i ylo = _mm256_set1_epi32(lanes::act_dword(x.qs + 4 * (16 * c + s)));
        const __m256i yhi = _mm256_set1_epi32(lanes::act_dword(x.qs + 4 * (16 * c + 8 + s)));
        for (int h = 0; h < H; ++h) {
          const __m256i bytes = load(b.qs[8 * c + s][kRows * h]);
          lo[h].add(_mm256_and_si256(bytes, low4), ylo);
          hi[h].add(_mm256_and_si256(_mm256_srli_epi16(bytes, 4), low4), yhi);
        }
      }
      for (int h = 0; h < H; ++h) {
        sum[h] = _mm256_add_epi32(sum[h], lo[h].scaled(load_aligned(p.sc[2 * c][h])));
        sum[h] = _mm256_add_epi32(sum[h], hi[h].scaled(load_aligned(p.sc[2 * c + 1][h])));
      }
    }
  }

  template <int H, int NA>
  static void run(int64_t k, const uint8_t* w, size_t, int nw, const uint8_t* a, size_t lda,
                  float* out, int64_t ldo_w, int64_t ldo_a) {
    const auto* group = reinterpret_cast<const BlockQ4_Kx16*>(w);
    alignas(32) Scales p;
    __m256 acc[H][NA];
    zero(acc);
    for (int64_t i = 0; i < k / kQK_K; ++i) {
      simd::prefetch_lines_ahead(group + i, sizeof(group[i]), lanes8::kGroupAhead);
      for (int h = 0; h < H; ++h) group_scales(group[i], p, h);
      if constexpr (NA == 1) {
        const auto* x = reinterpret_cast<const PackedQ8K*>(a);
        __m256i sum[H];
        lone_sums<H>(group[i], p, x[i], sum);
        for (int h = 0; h < H; ++h) add_sums(sum[h], p, h, x[i], acc[h][0]);
      } else {
        add_super<H, NA>(GroupQuants{group[i]}, p, a, lda, i, acc);
      }
    }
    store_register_rows<kRows>(acc, nw, out, ldo_w, ldo_a);
  }
};

/// The packed path whose tile reads rows as Rows does (in place or regrouped) and whose panels
/// `fill_panel` writes; the activations and the panel's arithmetic are the same for both.
template <class Rows>
constexpr PackedDot packed_q4_k(void (*fill_panel)(int64_t, const uint8_t*, size_t, int,
                                                   uint8_t*)) {
  return {
      .max_w = kHalves * kRows,
      .max_a = kMaxA,
      .group = kQK_K,
      .act_row_bytes = kquant::packed_q8k_row_bytes,
      .pack = kquant::pack_q8k<false>,
      .tile = lanes8::dispatch<Rows, kHalves, kMaxA>,
      .panel_bytes = panel_bytes,
      .pack_panel = fill_panel,
      .panel_tile = lanes8::dispatch<Panel, kHalves, kMaxA>,
  };
}

}  // namespace

const PackedDot kPackedQ4_K = packed_q4_k<Plain>(pack_panel);
const PackedDot kPackedQ4_Kx16 = packed_q4_k<Grouped>(pack_panel_grouped);

}  // namespace strata::cpu::STRATA_KERNEL_NS

#endif  // STRATA_CPU_LANES8
