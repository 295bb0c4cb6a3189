// The 256-bit tile kernel for q6_k weights over packed activations (dot_k_packed.h), for the
// kernel sets without AVX-512 VNNI: dot_packed_q6_k.cpp's arithmetic with one weight row per
// register where that kernel puts two, so the same integer lanes and float steps, and
// llama.cpp's rounding (dot_k_order.h).
//
// Levels are signed w = u - 32 and the packed activations y + 128 as unsigned bytes:
// sum sc (y + 128) w = sum sc y w + 128 sum sc w, the second sum depending on the weights only.
// vpmaddubsw's pairs stay within 2 * 255 * 32 < 2^15. A group of 32 elements takes sub-block
// scale 2g for its first sixteen and 2g + 1 for the next: one vpermd of the row's scales, held
// as int16 pairs in dwords. Prefill unpacks a tile's rows once into a panel for every activation
// tile of a chunk; decode unpacks them as it reads.
#include <algorithm>

#include "core/blocks.h"
#include "cpu/kernels/dot_k.h"
#include "cpu/kernels/dot_k_order.h"
#include "cpu/kernels/dot_k_packed.h"
#include "cpu/kernels/dot_lanes8.h"
#include "cpu/kernels/dot_tile.h"
#include "cpu/kernels/simd.h"
#include "cpu/kernels/simd_int.h"

#if defined(STRATA_CPU_LANES8)

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

using core::BlockQ6_K;
using core::kQK_K;
using kquant::PackedQ8K;

constexpr int kMaxW = 2;
constexpr int kMaxA = 4;

struct alignas(32) Pick {
  int32_t v[8];
};
/// vpermd indices for quarter q of a half: dword 2q to lanes 0-3, dword 2q + 1 to lanes 4-7.
constexpr Pick kScalePick[4] = {{{0, 0, 0, 0, 1, 1, 1, 1}},
                                {{2, 2, 2, 2, 3, 3, 3, 3}},
                                {{4, 4, 4, 4, 5, 5, 5, 5}},
                                {{6, 6, 6, 6, 7, 7, 7, 7}}};

/// A row's sixteen sub-block scales as int16 pairs in dwords: p[0] scales 0-7, p[1] 8-15.
[[gnu::always_inline]] inline void scale_pairs(const BlockQ6_K& x, __m256i (&p)[2]) {
  for (int i = 0; i < 2; ++i) {
    const __m256i s =
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x.scales + 8 * i)));
    p[i] =
        _mm256_or_si256(_mm256_and_si256(s, _mm256_set1_epi32(0xffff)), _mm256_slli_epi32(s, 16));
  }
}

/// Group kG's scale for each int16 of its 32 elements' pairs.
template <int kG>
[[gnu::always_inline]] inline __m256i group_scales(__m256i pairs) {
  return _mm256_permutevar8x32_epi32(
      pairs, _mm256_load_si256(reinterpret_cast<const __m256i*>(kScalePick[kG % 4].v)));
}

/// Group kQ of a half's signed levels (u - 32), from its ql bytes (low nibbles for kQ < 2, high
/// ones after) and the half's qh bytes.
template <int kQ>
[[gnu::always_inline]] inline __m256i group_levels(__m256i ql, __m256i qh) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i nibble = _mm256_and_si256(kQ >= 2 ? _mm256_srli_epi16(ql, 4) : ql, low4);
  const __m256i u = _mm256_or_si256(
      nibble, _mm256_and_si256(simd::move_bit<2 * kQ, 4>(qh), _mm256_set1_epi8(0x30)));
  return _mm256_sub_epi8(u, _mm256_set1_epi8(32));
}

[[gnu::always_inline]] inline __m256i load(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

/// Group kG's levels of row x: half kG / 4, quarter kG % 4.
template <int kG>
[[gnu::always_inline]] inline __m256i row_levels(const BlockQ6_K& x) {
  constexpr int kH = kG / 4, kQ = kG % 4;
  return group_levels<kQ>(load(x.ql + 64 * kH + 32 * (kQ % 2)), load(x.qh + 32 * kH));
}

/// acc + (d_w * y_d) * lanes, lane by lane (dot_k_order.h's step).
[[gnu::always_inline]] inline __m256 fma_lanes(__m256 acc, float d_w, float y_d, __m256i lanes) {
  return _mm256_fmadd_ps(_mm256_set1_ps(d_w * y_d), _mm256_cvtepi32_ps(lanes), acc);
}

template <int NW, int NA>
[[gnu::always_inline]] inline void store_outputs(const __m256 (&acc)[NW][NA], float* out,
                                                 int64_t ldo_w, int64_t ldo_a) {
  for (int r = 0; r < NW; ++r) {
    for (int c = 0; c < NA; ++c) {
      alignas(32) float lanes[8];
      _mm256_store_ps(lanes, acc[r][c]);
      out[r * ldo_w + c * ldo_a] = kquant::sum8(lanes);
    }
  }
}

template <int NW, int NA>
[[gnu::always_inline]] inline void zero(__m256 (&acc)[NW][NA]) {
  for (int r = 0; r < NW; ++r) {
    for (int c = 0; c < NA; ++c) acc[r][c] = _mm256_setzero_ps();
  }
}

/// Decode: each row's super-block unpacked as it is read.
struct InPlace {
  template <int NW, int NA>
  static void run(int64_t k, const uint8_t* w, size_t ldw, const uint8_t* a, size_t lda, float* out,
                  int64_t ldo_w, int64_t ldo_a) {
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
    __m256 acc[NW][NA];
    zero(acc);
    const uint8_t* next = simd::prefetch_origin(w, NW * ldw);
    for (int64_t b = 0; b < k / kQK_K; ++b) {
      simd::prefetch_tile_ahead<NW * sizeof(BlockQ6_K)>(
          next, static_cast<size_t>(NW * b) * sizeof(BlockQ6_K));
      const PackedQ8K* y[NA];
      for (int c = 0; c < NA; ++c) y[c] = reinterpret_cast<const PackedQ8K*>(a + c * lda) + b;
      const BlockQ6_K* x[NW];
      __m256i scales[NW][2], weights_only[NW], isum[NW][NA];
      for (int r = 0; r < NW; ++r) {
        x[r] = reinterpret_cast<const BlockQ6_K*>(w + r * ldw) + b;
        scale_pairs(*x[r], scales[r]);
        weights_only[r] = _mm256_setzero_si256();
        for (int c = 0; c < NA; ++c) isum[r][c] = _mm256_setzero_si256();
      }
      kquant::unroll<8>([&](auto g_c) [[gnu::always_inline]] {
        constexpr int kG = decltype(g_c)::value;
        if constexpr (NA == 1) {
          // One activation row: its pairs less the weights-only pairs in int16 (both within
          // 2 * 255 * 32, their difference within 2 * 128 * 32), then one scaled sum; the same
          // integer lanes as the weights-only lanes taken away after (weights_only stays 0).
          const __m256i yq = load(y[0]->qs + 32 * kG);
          for (int r = 0; r < NW; ++r) {
            const __m256i wq = row_levels<kG>(*x[r]);
            const __m256i pairs =
                _mm256_sub_epi16(simd::pairs_u8_i8(yq, wq), simd::pairs_u8_i8(flip, wq));
            isum[r][0] = simd::madd_acc(isum[r][0], pairs, group_scales<kG>(scales[r][kG / 4]));
          }
          return;
        }
        __m256i wq[NW], sc[NW];
        for (int r = 0; r < NW; ++r) {
          wq[r] = row_levels<kG>(*x[r]);
          sc[r] = group_scales<kG>(scales[r][kG / 4]);
          weights_only[r] = simd::madd_acc(weights_only[r], simd::pairs_u8_i8(flip, wq[r]), sc[r]);
        }
        for (int c = 0; c < NA; ++c) {
          const __m256i yq = load(y[c]->qs + 32 * kG);
          for (int r = 0; r < NW; ++r) {
            isum[r][c] = simd::madd_acc(isum[r][c], simd::pairs_u8_i8(yq, wq[r]), sc[r]);
          }
        }
      });
      for (int r = 0; r < NW; ++r) {
        const float d = simd::half_to_float(x[r]->d);
        for (int c = 0; c < NA; ++c) {
          acc[r][c] =
              fma_lanes(acc[r][c], d, y[c]->d, _mm256_sub_epi32(isum[r][c], weights_only[r]));
        }
      }
    }
    store_outputs<NW, NA>(acc, out, ldo_w, ldo_a);
  }
};

/// One super-block of a row as InPlace computes it before the activations come in.
struct alignas(64) PanelRow {
  int8_t levels[8][32];     ///< group g's levels - 32
  int32_t scales[2][8];     ///< scale_pairs
  int32_t weights_only[8];  ///< 128 * the scaled sum of each lane's levels
  float d;
};
static_assert(sizeof(PanelRow) == 384);

size_t panel_bytes(int64_t k) {
  return static_cast<size_t>(k / kQK_K) * kMaxW * sizeof(PanelRow);
}

/// Rows [0, nw) of w unpacked: super-block b of row r at panel[b * kMaxW + r].
void pack_panel(int64_t k, const uint8_t* w, size_t ldw, int nw, uint8_t* panel) {
  auto* out = reinterpret_cast<PanelRow*>(panel);
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  for (int r = 0; r < nw; ++r) {
    const auto* row = reinterpret_cast<const BlockQ6_K*>(w + r * ldw);
    for (int64_t b = 0; b < k / kQK_K; ++b) {
      PanelRow& o = out[b * kMaxW + r];
      const BlockQ6_K& x = row[b];
      __m256i scales[2];
      scale_pairs(x, scales);
      __m256i weights_only = _mm256_setzero_si256();
      kquant::unroll<8>([&](auto g_c) [[gnu::always_inline]] {
        constexpr int kG = decltype(g_c)::value;
        const __m256i wq = row_levels<kG>(x);
        weights_only = simd::madd_acc(weights_only, simd::pairs_u8_i8(flip, wq),
                                      group_scales<kG>(scales[kG / 4]));
        _mm256_store_si256(reinterpret_cast<__m256i*>(o.levels[kG]), wq);
      });
      for (int i = 0; i < 2; ++i) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(o.scales[i]), scales[i]);
      }
      _mm256_store_si256(reinterpret_cast<__m256i*>(o.weights_only), weights_only);
      o.d = simd::half_to_float(x.d);
    }
  }
}

/// InPlace's arithmetic on a panel: the same integer lanes and float steps, so the same bits.
struct Panel {
  template <int NW, int NA>
  static void run(int64_t k, const uint8_t* w, size_t /*ldw*/, const uint8_t* a, size_t lda,
                  float* out, int64_t ldo_w, int64_t ldo_a) {
    const auto* panel = reinterpret_cast<const PanelRow*>(w);
    __m256 acc[NW][NA];
    zero(acc);
    for (int64_t b = 0; b < k / kQK_K; ++b) {
      const PanelRow* rows = panel + b * kMaxW;
      const PackedQ8K* y[NA];
      for (int c = 0; c < NA; ++c) y[c] = reinterpret_cast<const PackedQ8K*>(a + c * lda) + b;
      __m256i isum[NW][NA];
      for (int r = 0; r < NW; ++r) {
        for (int c = 0; c < NA; ++c) isum[r][c] = _mm256_setzero_si256();
      }
      kquant::unroll<8>([&](auto g_c) [[gnu::always_inline]] {
        constexpr int kG = decltype(g_c)::value;
        __m256i wq[NW], sc[NW];
        for (int r = 0; r < NW; ++r) {
          wq[r] = _mm256_load_si256(reinterpret_cast<const __m256i*>(rows[r].levels[kG]));
          sc[r] = group_scales<kG>(
              _mm256_load_si256(reinterpret_cast<const __m256i*>(rows[r].scales[kG / 4])));
        }
        for (int c = 0; c < NA; ++c) {
          const __m256i yq = load(y[c]->qs + 32 * kG);
          for (int r = 0; r < NW; ++r) {
            isum[r][c] = simd::madd_acc(isum[r][c], simd::pairs_u8_i8(yq, wq[r]), sc[r]);
          }
        }
      });
      for (int r = 0; r < NW; ++r) {
        const __m256i weights_only =
            _mm256_load_si256(reinterpret_cast<const __m256i*>(rows[r].weights_only));
        for (int c = 0; c < NA; ++c) {
          acc[r][c] =
              fma_lanes(acc[r][c], rows[r].d, y[c]->d, _mm256_sub_epi32(isum[r][c], weights_only));
        }
      }
    }
    store_outputs<NW, NA>(acc, out, ldo_w, ldo_a);
  }
};

}  // namespace

const PackedDot kPackedQ6_K = {kMaxW,
                               kMaxA,
                               kQK_K,
                               kquant::packed_q8k_row_bytes,
                               kquant::pack_q8k<true>,
                               tile_dispatch<InPlace, kMaxW, kMaxA>,
                               panel_bytes,
                               pack_panel,
                               tile_dispatch<Panel, kMaxW, kMaxA>};

}  // namespace strata::cpu::STRATA_KERNEL_NS

#endif  // STRATA_CPU_LANES8
