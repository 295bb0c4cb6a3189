// The 256-bit tile kernel for q5_k weights over packed activations (dot_k_packed.h), for the
// kernel sets without AVX-512 VNNI: the integer lanes and float steps of llama.cpp's AVX2
// ggml_vec_dot_q5_K_q8_K (dot_q4_q5_k.cpp states them), one weight row per register, so the
// same bits as the vector-dot kernel and as dot_packed_q5_k.cpp's two rows per register.
//
// Levels u = nibble + 16 * (bit of qh) are unsigned and the activations signed, so a sub-block
// of 32 is one vpmaddubsw (pairs within 2 * 31 * 128 < 2^15) and one vpmaddwd (or vpdpwssd)
// against its scale. The mins take the activations' sub-block sums, which packing computed once:
// a row's eight mins against four activation rows' sums in two registers, whose lanes sum to
// each activation row's M with two vphaddd.
//
// Prefill unpacks a tile's rows once into a panel (levels a byte each, scales, mins, d and dmin)
// for every activation tile of a chunk; decode unpacks them as it reads, as the vector-dot
// kernel does.
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

using core::BlockQ5_K;
using core::kQK_K;
using kquant::load256;
using kquant::PackedQ8K;

constexpr int kMaxW = 2;
constexpr int kMaxA = 4;

/// A row's scales (int16 lanes 0-7) and mins (8-15) from its 12 packed bytes: sub-blocks 0-3 in
/// the low 6 bits of bytes s (scale) and s + 4 (min), sub-blocks 4-7 in the nibbles of byte
/// s + 8 plus the top 2 bits of bytes s and s + 4.
[[gnu::always_inline]] inline __m256i scales_and_mins(const BlockQ5_K& x) {
  // A 16-byte load: the 4 bytes after the 12 packed ones are the block's own qh.
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.scales));
  const __m128i low =
      _mm_shuffle_epi8(b, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
  const __m128i top =
      _mm_shuffle_epi8(b, _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7));
  const __m128i keep = _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0);
  const __m128i keep_high_nibble =
      _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15);
  const __m128i v =
      _mm_or_si128(_mm_or_si128(_mm_and_si128(low, keep),
                                _mm_and_si128(_mm_srli_epi16(low, 4), keep_high_nibble)),
                   _mm_and_si128(_mm_srli_epi16(top, 2), _mm_set1_epi8(0x30)));
  return _mm256_cvtepu8_epi16(v);
}

/// A row's super-block where it lies (decode): levels unpacked as they are read.
struct RowInPlace {
  const BlockQ5_K* x;
  __m256i scales;  ///< the eight scales as int16, in both 128-bit halves
  __m128i mins_;
  __m256i high;

  RowInPlace() = default;
  explicit RowInPlace(const BlockQ5_K* block) : x(block) {
    const __m256i sm = scales_and_mins(*x);
    scales = _mm256_permute2x128_si256(sm, sm, 0x00);
    mins_ = _mm256_extracti128_si256(sm, 1);
    high = load256(x->qh);
  }
  /// Sub-block kS's 32 levels, a byte each.
  template <int kS>
  [[gnu::always_inline]] __m256i levels() const {
    const __m256i qs = load256(x->qs + 32 * (kS / 2));
    const __m256i nibble =
        _mm256_and_si256(kS % 2 ? _mm256_srli_epi16(qs, 4) : qs, _mm256_set1_epi8(0x0f));
    return _mm256_or_si256(nibble,
                           _mm256_and_si256(simd::move_bit<kS, 4>(high), _mm256_set1_epi8(0x10)));
  }
  /// Sub-block kS's scale in every int16.
  template <int kS>
  [[gnu::always_inline]] __m256i scale() const {
    return _mm256_shuffle_epi8(scales, _mm256_set1_epi16(0x0100 + 0x0202 * kS));
  }
  [[gnu::always_inline]] __m128i mins() const { return mins_; }
  [[gnu::always_inline]] float d() const { return simd::half_to_float(x->d); }
  [[gnu::always_inline]] float dmin() const { return simd::half_to_float(x->dmin); }
};

/// One super-block of a row as RowInPlace gives it, stored once per chunk by prefill.
struct alignas(64) PanelRow {
  uint8_t levels[8][32];  ///< sub-block s's levels
  int32_t scales[8];      ///< sub-block s's scale in both int16 halves
  int16_t mins[8];
  float d, dmin;
};
static_assert(sizeof(PanelRow) == 320);

struct RowInPanel {
  const PanelRow* p;

  template <int kS>
  [[gnu::always_inline]] __m256i levels() const {
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(p->levels[kS]));
  }
  template <int kS>
  [[gnu::always_inline]] __m256i scale() const {
    return _mm256_set1_epi32(p->scales[kS]);
  }
  [[gnu::always_inline]] __m128i mins() const {
    return _mm_load_si128(reinterpret_cast<const __m128i*>(p->mins));
  }
  [[gnu::always_inline]] float d() const { return p->d; }
  [[gnu::always_inline]] float dmin() const { return p->dmin; }
};

/// Rows where they lie, asking for a later tile's as they are read.
struct RowsInPlace {
  using Row = RowInPlace;
  const uint8_t* w;
  size_t ldw;
  const uint8_t* next;

  template <int NW>
  [[gnu::always_inline]] void ask_ahead(int64_t b) const {
    simd::prefetch_tile_ahead<NW * sizeof(BlockQ5_K)>(
        next, static_cast<size_t>(NW * b) * sizeof(BlockQ5_K));
  }
  [[gnu::always_inline]] Row row(int r, int64_t b) const {
    return Row(reinterpret_cast<const BlockQ5_K*>(w + r * ldw) + b);
  }
};

/// A panel: super-block b of row r at panel[b * kMaxW + r].
struct RowsInPanel {
  using Row = RowInPanel;
  const PanelRow* panel;

  template <int NW>
  [[gnu::always_inline]] void ask_ahead(int64_t) const {}
  [[gnu::always_inline]] Row row(int r, int64_t b) const { return Row{panel + b * kMaxW + r}; }
};

/// Activation row c's lane in a register of mins' sums (walk's `m` and `neg_yd`): c 0 and 2 in
/// lanes 0 and 1, c 1 and 3 in lanes 4 and 5.
constexpr int kMinsLane[4] = {0, 4, 1, 5};

template <int NW, int NA, class Rows>
[[gnu::always_inline]] inline void walk(const Rows& rows, int64_t k, const uint8_t* a, size_t lda,
                                        float* out, int64_t ldo_w, int64_t ldo_a) {
  static_assert(NA <= 4, "four activation rows' mins share two registers");
  __m256 acc[NW][NA];
  __m256 accm[NW];  // row r's mins, activation c in lane kMinsLane[c]
  for (int r = 0; r < NW; ++r) {
    for (int c = 0; c < NA; ++c) acc[r][c] = _mm256_setzero_ps();
    accm[r] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < k / kQK_K; ++b) {
    rows.template ask_ahead<NW>(b);
    const PackedQ8K* y[NA];
    for (int c = 0; c < NA; ++c) y[c] = reinterpret_cast<const PackedQ8K*>(a + c * lda) + b;
    // The activations' sub-block sums: activation rows 0 and 1 in sums01's halves, 2 and 3 in
    // sums23's; and -y.d in the lanes where each activation row's M lands.
    const auto sums = [&](int c) {
      return c < NA ? _mm_load_si128(reinterpret_cast<const __m128i*>(y[c]->sums))
                    : _mm_setzero_si128();
    };
    const __m256i sums01 = _mm256_set_m128i(sums(1), sums(0));
    const __m256i sums23 = _mm256_set_m128i(sums(3), sums(2));
    const auto neg_d = [&](int c) { return c < NA ? y[c]->neg_d : 0.0f; };
    const __m256 neg_yd = _mm256_setr_ps(neg_d(0), neg_d(2), 0, 0, neg_d(1), neg_d(3), 0, 0);

    typename Rows::Row row[NW];
    for (int r = 0; r < NW; ++r) row[r] = rows.row(r, b);
    __m256i isum[NW][NA];
    for (int r = 0; r < NW; ++r) {
      for (int c = 0; c < NA; ++c) isum[r][c] = _mm256_setzero_si256();
    }
    kquant::unroll<8>([&](auto s_c) [[gnu::always_inline]] {
      constexpr int kS = decltype(s_c)::value;
      __m256i u[NW], sc[NW];
      for (int r = 0; r < NW; ++r) {
        u[r] = row[r].template levels<kS>();
        sc[r] = row[r].template scale<kS>();
      }
      for (int c = 0; c < NA; ++c) {
        const __m256i yq = load256(y[c]->qs + 32 * kS);
        for (int r = 0; r < NW; ++r) {
          isum[r][c] = simd::madd_acc(isum[r][c], simd::pairs_u8_i8(u[r], yq), sc[r]);
        }
      }
    });
    for (int r = 0; r < NW; ++r) {
      const float d = row[r].d();
      for (int c = 0; c < NA; ++c) {
        acc[r][c] =
            _mm256_fmadd_ps(_mm256_set1_ps(y[c]->d * d), _mm256_cvtepi32_ps(isum[r][c]), acc[r][c]);
      }
      // M = sum_s m[s] S[s] of every activation row (exact integers), then
      // accm = fma(-y.d * dmin, M, accm) as the vector-dot kernel's one lane does.
      const __m128i mins = row[r].mins();
      const __m256i m2 = _mm256_set_m128i(mins, mins);
      const __m256i p =
          _mm256_hadd_epi32(_mm256_madd_epi16(m2, sums01), _mm256_madd_epi16(m2, sums23));
      const __m256 m = _mm256_cvtepi32_ps(_mm256_hadd_epi32(p, p));
      accm[r] = _mm256_fmadd_ps(_mm256_mul_ps(neg_yd, _mm256_set1_ps(row[r].dmin())), m, accm[r]);
    }
  }
  for (int r = 0; r < NW; ++r) {
    alignas(32) float mins[8];
    _mm256_store_ps(mins, accm[r]);
    for (int c = 0; c < NA; ++c) {
      out[r * ldo_w + c * ldo_a] = simd::hsum(acc[r][c]) + mins[kMinsLane[c]];
    }
  }
}

/// Decode: rows read in place.
struct InPlace {
  template <int NW, int NA>
  static void run(int64_t k, const uint8_t* w, size_t ldw, const uint8_t* a, size_t lda, float* out,
                  int64_t ldo_w, int64_t ldo_a) {
    walk<NW, NA>(RowsInPlace{w, ldw, simd::prefetch_origin(w, NW * ldw)}, k, a, lda, out, ldo_w,
                 ldo_a);
  }
};

size_t panel_bytes(int64_t k) {
  return static_cast<size_t>(k / kQK_K) * kMaxW * sizeof(PanelRow);
}

/// Rows [0, nw) of w unpacked as RowInPlace reads them.
void pack_panel(int64_t k, const uint8_t* w, size_t ldw, int nw, uint8_t* panel) {
  auto* out = reinterpret_cast<PanelRow*>(panel);
  const RowsInPlace rows{w, ldw, nullptr};
  for (int r = 0; r < nw; ++r) {
    for (int64_t b = 0; b < k / kQK_K; ++b) {
      const RowInPlace row = rows.row(r, b);
      PanelRow& o = out[b * kMaxW + r];
      kquant::unroll<8>([&](auto s_c) [[gnu::always_inline]] {
        constexpr int kS = decltype(s_c)::value;
        _mm256_store_si256(reinterpret_cast<__m256i*>(o.levels[kS]), row.levels<kS>());
        o.scales[kS] = _mm256_extract_epi32(row.scale<kS>(), 0);
      });
      _mm_store_si128(reinterpret_cast<__m128i*>(o.mins), row.mins());
      o.d = row.d();
      o.dmin = row.dmin();
    }
  }
}

/// InPlace's steps on a panel (PackedDot::panel_tile): the same lanes, so the same bits.
struct Panel {
  template <int NW, int NA>
  static void run(int64_t k, const uint8_t* w, size_t /*ldw*/, const uint8_t* a, size_t lda,
                  float* out, int64_t ldo_w, int64_t ldo_a) {
    walk<NW, NA>(RowsInPanel{reinterpret_cast<const PanelRow*>(w)}, k, a, lda, out, ldo_w, ldo_a);
  }
};

}  // namespace

const PackedDot kPackedQ5_K = {kMaxW,
                               kMaxA,
                               kQK_K,
                               kquant::packed_q8k_row_bytes,
                               kquant::pack_q8k<false>,
                               tile_dispatch<InPlace, kMaxW, kMaxA>,
                               panel_bytes,
                               pack_panel,
                               tile_dispatch<Panel, kMaxW, kMaxA>};

}  // namespace strata::cpu::STRATA_KERNEL_NS

#endif  // STRATA_CPU_LANES8
