// The AVX-512 tile kernel for q5_k weights over packed activations (dot_k_packed.h), rounding
// as llama.cpp does (dot_q4_q5_k.cpp states the arithmetic; dot_k_order.h the rules). It is
// written for both q4_k and q5_k blocks; q4_k takes the one-row-per-lane kernel instead
// (dot_packed_q4_k.cpp), which prefill runs about twice as fast.
//
// Weight rows are taken two at a time, one per 256-bit half of each register: a row pair's 32
// bytes of qs give both rows' sub-block 2j (low nibbles) and 2j + 1 (high nibbles), and
// vpmaddubsw + vpdpwssd against the activations broadcast to both halves leave, for each
// activation, lanes 0-7 of the first row and 8-15 of the second, in ggml's partition. Each
// group of 64 activations is loaded once for all the tile's rows; the mins of four activations
// share a register (lanes 4c..4c+3).
//
// Decode reads the rows where they lie; prefill unpacks each tile's rows once into a panel
// (their levels a byte each, scales and mins, d and dmin) that every activation tile of its
// chunk reads with the same steps, so the same bits. MulMatPrefill/q5_k on 2 Zen 5 threads,
// 2048 x 5632 and 5632 x 2048 by 512: 30 -> 27 and 27 -> 24 ms; tinyllama Q5_K_M pp512
// 191 -> 222 t/s (medians of 6 alternated runs).
#include <algorithm>
#include <cstring>

#include "core/blocks.h"
#include "cpu/kernels/dot_k_order.h"
#include "cpu/kernels/dot_k_packed.h"
#include "cpu/kernels/dot_tile.h"
#include "cpu/kernels/simd.h"

#if defined(STRATA_CPU_AVX512)

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

using core::BlockQ5_K;
using core::kQK_K;
using kquant::PackedQ8K;

// Scales and mins of two rows as int16, one 128-bit lane each: [sc 0 | m 0 | sc 1 | m 1]. The
// 12 packed bytes give sub-blocks 0-3 in the low 6 bits of bytes s (scale) and s + 4 (min),
// and sub-blocks 4-7 in the nibbles of byte s + 8 plus the top 2 bits of bytes s and s + 4.
__m512i scale_min_pair(const uint8_t* p0, const uint8_t* p1) {
  // 16-byte loads: the 4 bytes after the 12 packed ones are the row's own quants.
  const __m256i b = _mm256_set_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p1)),
                                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(p0)));
  const __m256i pick_low = _mm256_broadcastsi128_si256(
      _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
  const __m256i pick_top = _mm256_broadcastsi128_si256(
      _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7));
  const __m256i keep = _mm256_broadcastsi128_si256(
      _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0));
  const __m256i keep_high_nibble = _mm256_broadcastsi128_si256(
      _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15));
  const __m256i low = _mm256_shuffle_epi8(b, pick_low);
  const __m256i top = _mm256_shuffle_epi8(b, pick_top);
  const __m256i v = _mm256_or_si256(
      _mm256_or_si256(_mm256_and_si256(low, keep),
                      _mm256_and_si256(_mm256_srli_epi16(low, 4), keep_high_nibble)),
      _mm256_and_si256(_mm256_srli_epi16(top, 2), _mm256_set1_epi8(0x30)));
  return _mm512_cvtepu8_epi16(v);
}

// Both rows' f16 d and dmin (adjacent in the block) as f32: [d 0, dmin 0, d 1, dmin 1].
template <class Block>
__m512 scales_pair(const Block& x0, const Block& x1) {
  static_assert(offsetof(Block, dmin) == offsetof(Block, d) + 2);
  uint32_t h0, h1;
  std::memcpy(&h0, &x0.d, 4);
  std::memcpy(&h1, &x1.d, 4);
  const __m128i h =
      _mm_insert_epi32(_mm_cvtsi32_si128(static_cast<int>(h0)), static_cast<int>(h1), 1);
  return _mm512_zextps128_ps512(_mm_cvtph_ps(h));
}

/// A pair of rows' super-block where it lies: its levels unpacked as they are read.
template <class Block, bool Fifth>
struct PairInPlace {
  const Block* x0 = nullptr;
  const Block* x1 = nullptr;

  /// q5_k's fifth bits of both rows (levels' `high`).
  [[gnu::always_inline]] __m512i high() const {
    if constexpr (Fifth) return kquant::row_pair(x0->qh, x1->qh);
    return _mm512_setzero_si512();
  }
  [[gnu::always_inline]] __m512i scale_min() const {
    return scale_min_pair(x0->scales, x1->scales);
  }
  [[gnu::always_inline]] __m512 d_dmin() const { return scales_pair(*x0, *x1); }
  /// Sub-blocks 2j (u0) and 2j + 1 (u1) of both rows, one level a byte.
  template <int kJ>
  [[gnu::always_inline]] void levels(__m512i high, __m512i& u0, __m512i& u1) const {
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const __m512i bit4 = _mm512_set1_epi8(0x10);
    const __m512i q = kquant::row_pair(x0->qs + 32 * kJ, x1->qs + 32 * kJ);
    u0 = _mm512_and_si512(q, low4);
    u1 = _mm512_and_si512(_mm512_srli_epi16(q, 4), low4);
    if constexpr (Fifth) {
      u0 = _mm512_or_si512(u0, _mm512_and_si512(simd::move_bit<2 * kJ, 4>(high), bit4));
      u1 = _mm512_or_si512(u1, _mm512_and_si512(simd::move_bit<2 * kJ + 1, 4>(high), bit4));
    }
  }
};

/// Weight rows where they lie (decode).
template <class Block, bool Fifth>
struct RowsInPlace {
  using Pair = PairInPlace<Block, Fifth>;
  const uint8_t* w;
  size_t ldw;
  const uint8_t* next;

  template <int NW>
  [[gnu::always_inline]] void ask_ahead(int64_t b) const {
    simd::prefetch_tile_ahead<NW * sizeof(Block)>(next,
                                                  static_cast<size_t>(NW * b) * sizeof(Block));
  }
  /// Pair p of a tile of nw rows (a second row past nw repeats row nw - 1), super-block b.
  [[gnu::always_inline]] Pair pair(int p, int nw, int64_t b) const {
    const auto row = [&](int r) { return reinterpret_cast<const Block*>(w + r * ldw) + b; };
    return Pair{row(2 * p), row(std::min(2 * p + 1, nw - 1))};
  }
};

/// One super-block of a pair of rows as PairInPlace gives it, stored by prefill's pack_panel so
/// that a chunk's activation tiles read it without unpacking it again.
struct alignas(64) PanelPair {
  uint8_t levels[4][2][64];  ///< sub-blocks 2j and 2j + 1 of both rows, one level a byte
  int16_t scale_min[32];     ///< scale_min_pair's register
  float d_dmin[16];          ///< scales_pair's register (four lanes used)
};
static_assert(sizeof(PanelPair) == 640);

struct PairInPanel {
  const PanelPair* p = nullptr;
  [[gnu::always_inline]] __m512i scale_min() const { return _mm512_load_si512(p->scale_min); }
  [[gnu::always_inline]] __m512 d_dmin() const { return _mm512_load_ps(p->d_dmin); }
  [[gnu::always_inline]] __m512i high() const { return _mm512_setzero_si512(); }
  template <int kJ>
  [[gnu::always_inline]] void levels(__m512i /*high*/, __m512i& u0, __m512i& u1) const {
    u0 = _mm512_load_si512(p->levels[kJ][0]);
    u1 = _mm512_load_si512(p->levels[kJ][1]);
  }
};

constexpr int kMaxPairs = 4;

/// A panel of up to kMaxPairs pairs: super-block b of pair p at panel[b * kMaxPairs + p].
struct RowsInPanel {
  using Pair = PairInPanel;
  const PanelPair* panel;

  template <int NW>
  [[gnu::always_inline]] void ask_ahead(int64_t) const {}
  [[gnu::always_inline]] Pair pair(int p, int, int64_t b) const {
    return Pair{panel + b * kMaxPairs + p};
  }
};

template <class Block, bool Fifth>
struct PackedScaleMin {
  static constexpr int kMaxW = 2 * kMaxPairs;
  static constexpr int kMaxA = 4;

  template <int NW, int NA>
  static void run(int64_t k, const uint8_t* w, size_t ldw, const uint8_t* a, size_t lda, float* out,
                  int64_t ldo_w, int64_t ldo_a) {
    const RowsInPlace<Block, Fifth> rows{w, ldw, simd::prefetch_origin(w, NW * ldw)};
    walk<NW, NA>(rows, k, a, lda, out, ldo_w, ldo_a);
  }

  /// Rows [0, nw) of w into a panel, as PairInPlace gives them.
  static void pack_panel(int64_t k, const uint8_t* w, size_t ldw, int nw, uint8_t* panel) {
    auto* out = reinterpret_cast<PanelPair*>(panel);
    const RowsInPlace<Block, Fifth> rows{w, ldw, nullptr};
    for (int p = 0; 2 * p < nw; ++p) {
      for (int64_t b = 0; b < k / kQK_K; ++b) {
        const auto pair = rows.pair(p, nw, b);
        const __m512i high = pair.high();
        PanelPair& o = out[b * kMaxPairs + p];
        kquant::unroll<4>([&](auto j_c) [[gnu::always_inline]] {
          constexpr int kJ = decltype(j_c)::value;
          __m512i u0, u1;
          pair.template levels<kJ>(high, u0, u1);
          _mm512_store_si512(o.levels[kJ][0], u0);
          _mm512_store_si512(o.levels[kJ][1], u1);
        });
        _mm512_store_si512(o.scale_min, pair.scale_min());
        _mm512_store_ps(o.d_dmin, pair.d_dmin());
      }
    }
  }

  static size_t panel_bytes(int64_t k) {
    return static_cast<size_t>(k / kQK_K) * kMaxPairs * sizeof(PanelPair);
  }

  template <int NW, int NA, class Rows>
  [[gnu::always_inline]] static void walk(const Rows& rows, int64_t k, const uint8_t* a, size_t lda,
                                          float* out, int64_t ldo_w, int64_t ldo_a) {
    static_assert(NA <= 4, "the mins of all activations share one register");
    constexpr int kPairs = (NW + 1) / 2;
    __m512 acc[kPairs][NA];
    __m512 accm[NW];  // row r: lanes 4c..4c+3 for activation c
    for (int p = 0; p < kPairs; ++p) {
      for (int c = 0; c < NA; ++c) acc[p][c] = _mm512_setzero_ps();
    }
    for (int r = 0; r < NW; ++r) accm[r] = _mm512_setzero_ps();
    for (int64_t b = 0; b < k / kQK_K; ++b) {
      rows.template ask_ahead<NW>(b);
      // The activations' side of the mins: S (int16 pairs) and -y.d in their four lanes.
      const PackedQ8K* y[NA];
      __m512i s16 = _mm512_setzero_si512();
      __m512 neg_yd = _mm512_setzero_ps();
      for (int c = 0; c < NA; ++c) {
        y[c] = reinterpret_cast<const PackedQ8K*>(a + c * lda) + b;
        const auto lanes = static_cast<__mmask16>(0xf << (4 * c));
        s16 = _mm512_mask_broadcast_i32x4(
            s16, lanes, _mm_load_si128(reinterpret_cast<const __m128i*>(y[c]->sums)));
        neg_yd = _mm512_mask_broadcastss_ps(neg_yd, lanes, _mm_set_ss(y[c]->neg_d));
      }
      // Per pair: its rows' super-blocks, scales and mins.
      typename Rows::Pair pair[kPairs];
      __m512i sm[kPairs], scales[kPairs], high[kPairs];
      __m512i isum[kPairs][NA];
      kquant::unroll<kPairs>([&](auto p_c) [[gnu::always_inline]] {
        constexpr int kP = decltype(p_c)::value;
        pair[kP] = rows.pair(kP, NW, b);
        sm[kP] = pair[kP].scale_min();
        high[kP] = pair[kP].high();
        scales[kP] = _mm512_maskz_shuffle_i64x2(0xff, sm[kP], sm[kP], _MM_SHUFFLE(2, 2, 0, 0));
        for (int c = 0; c < NA; ++c) isum[kP][c] = _mm512_setzero_si512();
      });
      // Each group of 64 activations is loaded once for all pairs.
      kquant::unroll<4>([&](auto j_c) [[gnu::always_inline]] {
        constexpr int kJ = decltype(j_c)::value;
        __m512i u0[kPairs], u1[kPairs], s0[kPairs], s1[kPairs];
        kquant::unroll<kPairs>([&](auto p_c) [[gnu::always_inline]] {
          constexpr int kP = decltype(p_c)::value;
          pair[kP].template levels<kJ>(high[kP], u0[kP], u1[kP]);
          // Scale 2j (bytes 4j, 4j + 1 of each lane) and 2j + 1 to every int16 of its row.
          s0[kP] = _mm512_shuffle_epi8(scales[kP], _mm512_set1_epi16(0x0100 + 0x0404 * kJ));
          s1[kP] = _mm512_shuffle_epi8(scales[kP], _mm512_set1_epi16(0x0302 + 0x0404 * kJ));
        });
        for (int c = 0; c < NA; ++c) {
          const __m512i lo = kquant::both_halves(y[c]->qs + 64 * kJ);
          const __m512i hi = kquant::both_halves(y[c]->qs + 64 * kJ + 32);
          for (int p = 0; p < kPairs; ++p) {
            isum[p][c] = simd::madd_acc(isum[p][c], simd::pairs_u8_i8(u0[p], lo), s0[p]);
            isum[p][c] = simd::madd_acc(isum[p][c], simd::pairs_u8_i8(u1[p], hi), s1[p]);
          }
        }
      });
      // The f32 steps: acc = fma(d_w * y.d, lanes, acc); accm = fma(dmin_w * -y.d, P, accm).
      kquant::unroll<kPairs>([&](auto p_c) [[gnu::always_inline]] {
        constexpr int kP = decltype(p_c)::value;
        const __m512 f = pair[kP].d_dmin();
        const __m512 d = _mm512_maskz_permutexvar_ps(
            0xffff, _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2), f);
        for (int c = 0; c < NA; ++c) {
          acc[kP][c] = kquant::fma_pair(acc[kP][c], d, y[c]->d, isum[kP][c]);
        }
        const auto mins_step = [&](int r, int lane, int dmin_lane) [[gnu::always_inline]] {
          const __m512i mins = _mm512_maskz_permutexvar_epi64(
              0xff,
              _mm512_set_epi64(2 * lane + 1, 2 * lane, 2 * lane + 1, 2 * lane, 2 * lane + 1,
                               2 * lane, 2 * lane + 1, 2 * lane),
              sm[kP]);
          __m512i p = _mm512_madd_epi16(s16, mins);
          if constexpr (Fifth) {  // ggml sums q5_k's four lanes first
            p = _mm512_add_epi32(p, _mm512_maskz_shuffle_epi32(0xffff, p, _MM_PERM_BADC));
            p = _mm512_add_epi32(p, _mm512_maskz_shuffle_epi32(0xffff, p, _MM_PERM_CDAB));
          }
          const __m512 dmin = _mm512_maskz_permutexvar_ps(0xffff, _mm512_set1_epi32(dmin_lane), f);
          accm[r] = _mm512_fmadd_ps(_mm512_mul_ps(dmin, neg_yd),
                                    _mm512_maskz_cvtepi32_ps(0xffff, p), accm[r]);
        };
        mins_step(2 * kP, 1, 1);
        if constexpr (2 * kP + 1 < NW) mins_step(2 * kP + 1, 3, 3);
      });
    }
    // Compile-time indices, so the accumulators stay registers rather than stack arrays.
    kquant::unroll<NW>([&](auto r_c) [[gnu::always_inline]] {
      constexpr int kR = decltype(r_c)::value;
      alignas(64) float m[16];
      _mm512_store_ps(m, accm[kR]);
      kquant::unroll<NA>([&](auto c_c) [[gnu::always_inline]] {
        constexpr int kC = decltype(c_c)::value;
        const float mins = Fifth ? m[4 * kC] : kquant::sum4(m + 4 * kC);
        out[kR * ldo_w + kC * ldo_a] = kquant::sum8_half(acc[kR / 2][kC], kR % 2) + mins;
      });
    });
  }
};

using Q5 = PackedScaleMin<BlockQ5_K, true>;

/// Q5's steps on a panel (PackedDot::panel_tile).
struct Q5Panel {
  template <int NW, int NA>
  static void run(int64_t k, const uint8_t* w, size_t /*ldw*/, const uint8_t* a, size_t lda,
                  float* out, int64_t ldo_w, int64_t ldo_a) {
    Q5::walk<NW, NA>(RowsInPanel{reinterpret_cast<const PanelPair*>(w)}, k, a, lda, out, ldo_w,
                     ldo_a);
  }
};

}  // namespace

const PackedDot kPackedQ5_K = {Q5::kMaxW,
                               Q5::kMaxA,
                               kQK_K,
                               kquant::packed_q8k_row_bytes,
                               kquant::pack_q8k<false>,
                               tile_dispatch<Q5, Q5::kMaxW, Q5::kMaxA>,
                               Q5::panel_bytes,
                               Q5::pack_panel,
                               tile_dispatch<Q5Panel, Q5::kMaxW, Q5::kMaxA>};

}  // namespace strata::cpu::STRATA_KERNEL_NS

#endif  // STRATA_CPU_AVX512
