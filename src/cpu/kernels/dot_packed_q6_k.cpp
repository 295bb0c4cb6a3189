// The AVX-512 tile kernel for q6_k weights over packed activations (dot_k_packed.h), rounding as
// llama.cpp does (dot_q6_k.cpp states the arithmetic; dot_k_order.h the rules).
//
// Weight rows are taken two at a time, one per 256-bit half of each register, as in
// dot_packed_q5_k.cpp. Levels are taken as signed w = u - 32 and the packed activations are
// y + 128 as unsigned bytes, so vpmaddubsw needs no separate offset pass:
// sum sc (y + 128) w = sum sc y w + 128 sum sc w, and the second sum depends on the weights
// only, once per row pair. vpmaddubsw pairs stay within 2 * 255 * 32 < 2^15.
#include <algorithm>

#include "core/blocks.h"
#include "cpu/kernels/dot_k_order.h"
#include "cpu/kernels/dot_k_packed.h"
#include "cpu/kernels/dot_tile.h"
#include "cpu/kernels/simd.h"

#if defined(STRATA_CPU_AVX512)

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

using core::BlockQ6_K;
using core::kQK_K;
using kquant::PackedQ8K;

// vpermw indices giving each 32-element group g its two scales: sc[2g] to the first 16
// elements and sc[2g + 1] to the next 16, from row 0's scales (words 0-15) in the low half
// and row 1's (words 16-31) in the high half.
struct ScaleIndex {
  alignas(64) uint16_t v[8][32];
};
constexpr ScaleIndex scale_index() {
  ScaleIndex x{};
  for (int g = 0; g < 8; ++g) {
    for (int i = 0; i < 32; ++i) {
      x.v[g][i] = static_cast<uint16_t>(16 * (i / 16) + 2 * g + i % 16 / 8);
    }
  }
  return x;
}
constexpr ScaleIndex kScaleIndex = scale_index();

/// Both rows' sixteen sub-block scales as int16: row 0's in the low half, row 1's in the high.
[[gnu::always_inline]] inline __m512i pair_scales(const BlockQ6_K& x0, const BlockQ6_K& x1) {
  return _mm512_cvtepi8_epi16(
      _mm256_set_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x1.scales)),
                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(x0.scales))));
}

/// Group kG's scale for every int16 of both rows, from pair_scales' register.
template <int kG>
[[gnu::always_inline]] inline __m512i group_scales(__m512i scales) {
  return _mm512_permutexvar_epi16(_mm512_load_si512(kScaleIndex.v[kG]), scales);
}

/// Both rows' d: row 0's in lanes 0-7, row 1's in lanes 8-15.
[[gnu::always_inline]] inline __m512 pair_d(const BlockQ6_K& x0, const BlockQ6_K& x1) {
  return kquant::pair_ps(simd::half_to_float(x0.d), simd::half_to_float(x1.d));
}

/// Group kQ of a half's signed levels (u - 32) for a pair of rows, from the pair's ql bytes of
/// that group (low nibbles for kQ < 2, high ones after) and the half's qh bytes.
template <int kQ>
[[gnu::always_inline]] inline __m512i group_levels(__m512i ql, __m512i qh) {
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  const __m512i nibble = _mm512_and_si512(kQ >= 2 ? _mm512_srli_epi16(ql, 4) : ql, low4);
  const __m512i u = _mm512_or_si512(
      nibble, _mm512_and_si512(simd::move_bit<2 * kQ, 4>(qh), _mm512_set1_epi8(0x30)));
  return _mm512_sub_epi8(u, _mm512_set1_epi8(32));
}

/// Each output's eight lanes summed (row r in half r % 2 of pair r / 2's accumulators).
/// Compile-time indices, so the accumulators stay registers rather than stack arrays.
template <int NW, int NA>
[[gnu::always_inline]] inline void store_outputs(const __m512 (&acc)[(NW + 1) / 2][NA], float* out,
                                                 int64_t ldo_w, int64_t ldo_a) {
  kquant::unroll<NW>([&](auto r_c) [[gnu::always_inline]] {
    constexpr int kR = decltype(r_c)::value;
    kquant::unroll<NA>([&](auto c_c) [[gnu::always_inline]] {
      constexpr int kC = decltype(c_c)::value;
      out[kR * ldo_w + kC * ldo_a] = kquant::sum8_half(acc[kR / 2][kC], kR % 2);
    });
  });
}

struct PackedQ6K {
  static constexpr int kMaxW = 4;
  static constexpr int kMaxA = 4;

  template <int NW, int NA>
  static void run(int64_t k, const uint8_t* w, size_t ldw, const uint8_t* a, size_t lda, float* out,
                  int64_t ldo_w, int64_t ldo_a) {
    constexpr int kPairs = (NW + 1) / 2;
    const auto row = [&](int r) { return reinterpret_cast<const BlockQ6_K*>(w + r * ldw); };
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    __m512 acc[kPairs][NA];
    for (int p = 0; p < kPairs; ++p) {
      for (int c = 0; c < NA; ++c) acc[p][c] = _mm512_setzero_ps();
    }
    const uint8_t* next = simd::prefetch_origin(w, NW * ldw);
    for (int64_t b = 0; b < k / kQK_K; ++b) {
      simd::prefetch_tile_ahead<NW * sizeof(BlockQ6_K)>(
          next, static_cast<size_t>(NW * b) * sizeof(BlockQ6_K));
      const PackedQ8K* y[NA];
      for (int c = 0; c < NA; ++c) y[c] = reinterpret_cast<const PackedQ8K*>(a + c * lda) + b;
      const BlockQ6_K* x0[kPairs];
      const BlockQ6_K* x1[kPairs];
      __m512i scales[kPairs], weights_only[kPairs], isum[kPairs][NA];
      __m512i ql[kPairs][2], qh[kPairs];
      kquant::unroll<kPairs>([&](auto p_c) [[gnu::always_inline]] {
        constexpr int kP = decltype(p_c)::value;
        x0[kP] = row(2 * kP) + b;
        x1[kP] = row(std::min(2 * kP + 1, NW - 1)) + b;
        scales[kP] = pair_scales(*x0[kP], *x1[kP]);
        weights_only[kP] = _mm512_setzero_si512();
        for (int c = 0; c < NA; ++c) isum[kP][c] = _mm512_setzero_si512();
      });
      // Group g of 32 elements (half h, quarter q): nibbles in ql[64 h + 32 (q % 2)] (high ones
      // for q >= 2), top bits at bits 2q of qh[32 h]. Its activations are loaded once for all
      // pairs.
      kquant::unroll<8>([&](auto g_c) [[gnu::always_inline]] {
        constexpr int kG = decltype(g_c)::value;
        constexpr int kH = kG / 4, kQ = kG % 4;
        __m512i wq[kPairs], sc[kPairs];
        kquant::unroll<kPairs>([&](auto p_c) [[gnu::always_inline]] {
          constexpr int kP = decltype(p_c)::value;
          // With few activations, registers are free to keep a half's ql and qh for its four
          // groups; with more, reloading is cheaper than spilling.
          for (int i = 0; i < 2; ++i) {
            if (NA > 2 ? i == kQ % 2 : kQ == 0) {
              const int off = 64 * kH + 32 * i;
              ql[kP][i] = kquant::row_pair(x0[kP]->ql + off, x1[kP]->ql + off);
            }
          }
          if constexpr (kQ == 0 || NA > 2) {
            qh[kP] = kquant::row_pair(x0[kP]->qh + 32 * kH, x1[kP]->qh + 32 * kH);
          }
          wq[kP] = group_levels<kQ>(ql[kP][kQ % 2], qh[kP]);
          sc[kP] = group_scales<kG>(scales[kP]);
          weights_only[kP] =
              simd::madd_acc(weights_only[kP], simd::pairs_u8_i8(flip, wq[kP]), sc[kP]);
        });
        for (int c = 0; c < NA; ++c) {
          const __m512i yq = kquant::both_halves(y[c]->qs + 32 * kG);
          for (int p = 0; p < kPairs; ++p) {
            isum[p][c] = simd::madd_acc(isum[p][c], simd::pairs_u8_i8(yq, wq[p]), sc[p]);
          }
        }
      });
      kquant::unroll<kPairs>([&](auto p_c) [[gnu::always_inline]] {
        constexpr int kP = decltype(p_c)::value;
        const __m512 d = pair_d(*x0[kP], *x1[kP]);
        for (int c = 0; c < NA; ++c) {
          const __m512i lanes = _mm512_sub_epi32(isum[kP][c], weights_only[kP]);
          acc[kP][c] = kquant::fma_pair(acc[kP][c], d, y[c]->d, lanes);
        }
      });
    }
    store_outputs<NW, NA>(acc, out, ldo_w, ldo_a);
  }
};

/// One super-block of a pair of rows as PackedQ6K computes it before the activations come in:
/// prefill unpacks a tile's rows once into a panel of these and walks every activation tile of
/// its chunk over it, where the in-place kernel unpacked them again for every four activation
/// rows (unpacking took about as many instructions as the products with four rows).
/// MulMatPrefill/q6_k on Zen 5, 2048 x 5632 and 5632 x 2048 by 512 rows: one thread 56 -> 45
/// and 49 -> 43 ms; two threads 29 -> 26 and 26 -> 24 ms, and 27 -> 22 and 25 -> 20 ms once
/// mul_mat walked each activation tile over all of a chunk's panels (its narrow panels) instead
/// of each panel over 512 activation rows from L3. A panel is 2.7 times its rows' bytes, so
/// packing it once per activation chunk cut to fit L2 had been slower than the in-place kernel
/// (5632 x 2048 on two threads: 28-33 ms). The sub-block scales stay packed (one permute a
/// group): expanded per group, the panel of a 5632-long row pair no longer fitted L1 beside its
/// activations (one thread: 55 ms).
struct alignas(64) PanelPair {
  int8_t levels[8][64];      ///< group g: row 0's levels - 32 (32 bytes), then row 1's
  int16_t scales[32];        ///< row 0's sixteen sub-block scales, then row 1's
  int32_t weights_only[16];  ///< 128 * the scaled sum of each lane's levels (see PackedQ6K)
  float d[16];               ///< row 0's d in lanes 0-7, row 1's in lanes 8-15
};
static_assert(sizeof(PanelPair) == 704);

constexpr int kPanelPairs = (PackedQ6K::kMaxW + 1) / 2;

size_t panel_bytes(int64_t k) {
  return static_cast<size_t>(k / kQK_K) * kPanelPairs * sizeof(PanelPair);
}

/// Rows [0, nw) of w unpacked: super-block b of pair p at panel[b * kPanelPairs + p]; a pair
/// missing its second row repeats row nw - 1 (its first), as PackedQ6K's does.
void pack_panel(int64_t k, const uint8_t* w, size_t ldw, int nw, uint8_t* panel) {
  auto* out = reinterpret_cast<PanelPair*>(panel);
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int p = 0; 2 * p < nw; ++p) {
    const auto* r0 = reinterpret_cast<const BlockQ6_K*>(w + 2 * p * ldw);
    const auto* r1 = reinterpret_cast<const BlockQ6_K*>(w + std::min(2 * p + 1, nw - 1) * ldw);
    for (int64_t b = 0; b < k / kQK_K; ++b) {
      PanelPair& o = out[b * kPanelPairs + p];
      const BlockQ6_K& x0 = r0[b];
      const BlockQ6_K& x1 = r1[b];
      const __m512i scales = pair_scales(x0, x1);
      __m512i weights_only = _mm512_setzero_si512();
      kquant::unroll<8>([&](auto g_c) [[gnu::always_inline]] {
        constexpr int kG = decltype(g_c)::value;
        constexpr int kH = kG / 4, kQ = kG % 4;
        const int off = 64 * kH + 32 * (kQ % 2);
        const __m512i wq = group_levels<kQ>(kquant::row_pair(x0.ql + off, x1.ql + off),
                                            kquant::row_pair(x0.qh + 32 * kH, x1.qh + 32 * kH));
        const __m512i sc = group_scales<kG>(scales);
        weights_only = simd::madd_acc(weights_only, simd::pairs_u8_i8(flip, wq), sc);
        _mm512_store_si512(o.levels[kG], wq);
      });
      _mm512_store_si512(o.scales, scales);
      _mm512_store_si512(o.weights_only, weights_only);
      _mm512_store_ps(o.d, pair_d(x0, x1));
    }
  }
}

/// PackedQ6K's arithmetic on a panel: the same integer lanes from the same levels and scales,
/// and the same float steps, so the same bits.
struct PanelQ6K {
  template <int NW, int NA>
  static void run(int64_t k, const uint8_t* w, size_t /*ldw*/, const uint8_t* a, size_t lda,
                  float* out, int64_t ldo_w, int64_t ldo_a) {
    constexpr int kPairs = (NW + 1) / 2;
    const auto* panel = reinterpret_cast<const PanelPair*>(w);
    __m512 acc[kPairs][NA];
    for (int p = 0; p < kPairs; ++p) {
      for (int c = 0; c < NA; ++c) acc[p][c] = _mm512_setzero_ps();
    }
    for (int64_t b = 0; b < k / kQK_K; ++b) {
      const PanelPair* pair = panel + b * kPanelPairs;
      const PackedQ8K* y[NA];
      for (int c = 0; c < NA; ++c) y[c] = reinterpret_cast<const PackedQ8K*>(a + c * lda) + b;
      __m512i isum[kPairs][NA];
      for (int p = 0; p < kPairs; ++p) {
        for (int c = 0; c < NA; ++c) isum[p][c] = _mm512_setzero_si512();
      }
      kquant::unroll<8>([&](auto g_c) [[gnu::always_inline]] {
        constexpr int kG = decltype(g_c)::value;
        __m512i wq[kPairs], sc[kPairs];
        for (int p = 0; p < kPairs; ++p) {
          wq[p] = _mm512_load_si512(pair[p].levels[kG]);
          sc[p] = group_scales<kG>(_mm512_load_si512(pair[p].scales));
        }
        for (int c = 0; c < NA; ++c) {
          const __m512i yq = kquant::both_halves(y[c]->qs + 32 * kG);
          for (int p = 0; p < kPairs; ++p) {
            isum[p][c] = simd::madd_acc(isum[p][c], simd::pairs_u8_i8(yq, wq[p]), sc[p]);
          }
        }
      });
      for (int p = 0; p < kPairs; ++p) {
        const __m512 d = _mm512_load_ps(pair[p].d);
        const __m512i weights_only = _mm512_load_si512(pair[p].weights_only);
        for (int c = 0; c < NA; ++c) {
          const __m512i lanes = _mm512_sub_epi32(isum[p][c], weights_only);
          acc[p][c] = kquant::fma_pair(acc[p][c], d, y[c]->d, lanes);
        }
      }
    }
    store_outputs<NW, NA>(acc, out, ldo_w, ldo_a);
  }
};

}  // namespace

const PackedDot kPackedQ6_K = {PackedQ6K::kMaxW,
                               PackedQ6K::kMaxA,
                               kQK_K,
                               kquant::packed_q8k_row_bytes,
                               kquant::pack_q8k<true>,
                               tile_dispatch<PackedQ6K, PackedQ6K::kMaxW, PackedQ6K::kMaxA>,
                               panel_bytes,
                               pack_panel,
                               tile_dispatch<PanelQ6K, PackedQ6K::kMaxW, PackedQ6K::kMaxA>};

}  // namespace strata::cpu::STRATA_KERNEL_NS

#endif  // STRATA_CPU_AVX512
