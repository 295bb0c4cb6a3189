// Many short f16 rows against a few activation rows: decode's attention scores, the K rows
// (cells) of one head against the query heads that share it, rows of 64 or 128 elements.
//
// The float tile kernels keep 16 lanes per output (element j into lane j % 16) and finish each
// output with a 16-way horizontal sum; with rows this short, those sums cost as much as the
// multiply-adds. Here 16 rows are transposed once (element d of the 16 rows in one register,
// lane i holding row i), so each output's 16 lanes are 16 registers and the sum runs across
// registers, in the pairs of simd::lane_tree16, after the same fused multiply-adds in the same
// order: every output keeps the tile kernels' bits, 16 outputs per register. Two registers of
// rows share each broadcast query element and four query rows each loaded column, so the
// multiply-adds are not held back by loads; the transposes then take about 40% of the time.
// On one AMD Zen 4 core, 32 cells against 8 query rows of 64 (in L1): 710 ns with the 4 x 6 f16
// tile, 520 ns here; DecodeAttention/4096 (one layer, 2 threads) 0.68 -> 0.59 ms.
//
// Flash attention needs no agreement with mul_mat's lanes: its variant (chained_tile) sums each
// output in element order, one multiply-add after another, across the same transposed rows, so
// a column is loaded once for all 8 query rows and no lanes are added up.
#include <algorithm>

#include "cpu/kernels/dot_packed.h"
#include "cpu/kernels/simd.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

#if defined(STRATA_CPU_AVX2) && defined(__AVX512F__)

constexpr int kRows = 16;    ///< weight rows per register: one per lane
constexpr int kGroups = 2;   ///< registers of rows per call
constexpr int kQueries = 4;  ///< activation rows walked together
constexpr int kMaxAct = 8;   ///< activation rows per call (a GQA group of 8 query heads)
constexpr int64_t kMaxK = 256;
constexpr int kAheadRows = kGroups * kRows;  ///< how far ahead the rows are asked for
// Zero-masked forms throughout: GCC 12 flags the unmasked ones as maybe-uninitialized.

__m512 unpacklo_pd(__m512 a, __m512 b) {
  return _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(0xff, _mm512_castps_pd(a), _mm512_castps_pd(b)));
}
__m512 unpackhi_pd(__m512 a, __m512 b) {
  return _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(0xff, _mm512_castps_pd(a), _mm512_castps_pd(b)));
}

// r[i][j] -> r[j][i] for 16 registers of 16 floats.
void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_maskz_unpacklo_ps(0xffff, r[i], r[i + 1]);
    t[i + 1] = _mm512_maskz_unpackhi_ps(0xffff, r[i], r[i + 1]);
  }
  // u[4j + c], 128-bit lane q: element 4q + c of rows 4j..4j+3.
  __m512 u[16];
  for (int j = 0; j < 16; j += 4) {
    u[j] = unpacklo_pd(t[j], t[j + 2]);
    u[j + 1] = unpackhi_pd(t[j], t[j + 2]);
    u[j + 2] = unpacklo_pd(t[j + 1], t[j + 3]);
    u[j + 3] = unpackhi_pd(t[j + 1], t[j + 3]);
  }
  // Element 4q + c of every row: 128-bit lane q of u[c], u[4 + c], u[8 + c], u[12 + c].
  for (int c = 0; c < 4; ++c) {
    const __m512 v0 = _mm512_maskz_shuffle_f32x4(0xffff, u[c], u[4 + c], 0x88);
    const __m512 v1 = _mm512_maskz_shuffle_f32x4(0xffff, u[c], u[4 + c], 0xdd);
    const __m512 v2 = _mm512_maskz_shuffle_f32x4(0xffff, u[8 + c], u[12 + c], 0x88);
    const __m512 v3 = _mm512_maskz_shuffle_f32x4(0xffff, u[8 + c], u[12 + c], 0xdd);
    r[c] = _mm512_maskz_shuffle_f32x4(0xffff, v0, v2, 0x88);
    r[4 + c] = _mm512_maskz_shuffle_f32x4(0xffff, v1, v3, 0x88);
    r[8 + c] = _mm512_maskz_shuffle_f32x4(0xffff, v0, v2, 0xdd);
    r[12 + c] = _mm512_maskz_shuffle_f32x4(0xffff, v1, v3, 0xdd);
  }
}

// Outputs of kQueries activation rows (a[q], row q at a[q]) against the transposed rows of
// kGroups groups of 16: lanes i and i + 8 side by side for every row and group, each loaded
// column feeding kQueries rows and each broadcast element kGroups groups; then lane_tree16's
// pairs across registers. sums[q][g] gets group g's 16 outputs for row q.
template <int kGroups, int kQueries>
void outputs(int64_t k, const float* cols, const float* const* a, __m512 sums[][kGroups]) {
  constexpr int kWidth = kGroups * kRows;
  alignas(64) float t8[kQueries][kGroups][8][kRows];
  for (int i = 0; i < 8; ++i) {
    __m512 lo[kQueries][kGroups], hi[kQueries][kGroups];
    for (int q = 0; q < kQueries; ++q) {
      for (int g = 0; g < kGroups; ++g) lo[q][g] = hi[q][g] = _mm512_setzero_ps();
    }
    for (int64_t d = 0; d < k; d += kRows) {
      __m512 col_lo[kGroups], col_hi[kGroups];
      for (int g = 0; g < kGroups; ++g) {
        col_lo[g] = _mm512_load_ps(cols + (d + i) * kWidth + g * kRows);
        col_hi[g] = _mm512_load_ps(cols + (d + i + 8) * kWidth + g * kRows);
      }
      for (int q = 0; q < kQueries; ++q) {
        const __m512 b_lo = _mm512_set1_ps(a[q][d + i]);
        const __m512 b_hi = _mm512_set1_ps(a[q][d + i + 8]);
        for (int g = 0; g < kGroups; ++g) {
          lo[q][g] = _mm512_fmadd_ps(col_lo[g], b_lo, lo[q][g]);
          hi[q][g] = _mm512_fmadd_ps(col_hi[g], b_hi, hi[q][g]);
        }
      }
    }
    for (int q = 0; q < kQueries; ++q) {
      for (int g = 0; g < kGroups; ++g) {
        _mm512_store_ps(t8[q][g][i], _mm512_add_ps(lo[q][g], hi[q][g]));
      }
    }
  }
  for (int q = 0; q < kQueries; ++q) {
    for (int g = 0; g < kGroups; ++g) {
      __m512 t4[4];
      for (int i = 0; i < 4; ++i) {
        t4[i] = _mm512_add_ps(_mm512_load_ps(t8[q][g][i]), _mm512_load_ps(t8[q][g][i + 4]));
      }
      sums[q][g] = _mm512_add_ps(_mm512_add_ps(t4[0], t4[2]), _mm512_add_ps(t4[1], t4[3]));
    }
  }
}

// The weight rows [0, nw) of w (ldw bytes apart), f16, as columns: cols[d * 32 + i] is element d
// of row i (rows past nw repeat the last); k a multiple of 16 up to kMaxK.
//
// A head's share of each cache row, a row apart, which the hardware prefetchers do not follow:
// the same rows of the next call (the next 32 cells) are asked for while these are read, each
// row's next line as the step that starts reading a line of the current rows comes. Asked for
// all at once before the reads (two calls ahead), their 64 lines had filled the core's miss
// buffers and held up the loads behind them (DecodeAttention/4096/22, Zen 5: one thread 11.3
// -> 10.1 ms when first spread). Spread by a counter of rows and lines, the bookkeeping (a
// multiply and two compares per line) and the checks for rows past nw took a fifth of this
// function; a line per row at every other step and row pointers fixed up front cost neither:
// DecodeAttention/4096/22 on one Zen 5 thread 10.3 -> 9.6 ms, DecodeFlashAttention 12.1 ->
// 11.2 (medians of 8 alternated runs; two threads 7.5 -> 7.1 and 8.2 -> 7.2).
void transpose_rows(int64_t k, const uint8_t* w, size_t ldw, int nw, float* cols) {
  constexpr int kWidth = kGroups * kRows;
  const uint8_t* next = w + static_cast<size_t>(kAheadRows) * ldw;
  // Rows past nw repeat the last one: their outputs are computed and never stored.
  const uint8_t* rows[kWidth];
  const int last = std::max(nw - 1, 0);
  for (int i = 0; i < kWidth; ++i) rows[i] = w + static_cast<size_t>(std::min(i, last)) * ldw;
  for (int g = 0; g < kGroups; ++g) {
    for (int64_t d0 = 0; d0 < k; d0 += kRows) {
      if (d0 % 32 == 0) {  // a new line of each row: the same line of the next call's rows
        const uint8_t* ask = next + static_cast<size_t>(g * kRows) * ldw + d0 * 2;
        for (int i = 0; i < kRows; ++i, ask += ldw) simd::prefetch_stream(ask);
      }
      __m512 r[kRows];
      for (int i = 0; i < kRows; ++i) {
        r[i] = _mm512_maskz_cvtph_ps(
            0xffff,
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[g * kRows + i] + d0 * 2)));
      }
      transpose16(r);
      for (int j = 0; j < kRows; ++j) _mm512_store_ps(cols + (d0 + j) * kWidth + g * kRows, r[j]);
    }
  }
}

// Stores the outputs of activation rows [c, c + nq) (16 weight rows a register, kGroups registers
// a row) where the DotTileFn contract puts them.
void store_outputs(const __m512 (*sums)[kGroups], int c, int nq, int nw, float* out, int64_t ldo_w,
                   int64_t ldo_a) {
  for (int q = 0; q < nq; ++q) {
    float* o = out + (c + q) * ldo_a;
    for (int g = 0; g < kGroups && g * kRows < nw; ++g) {
      const int n = std::min(kRows, nw - g * kRows);
      simd::store_first(o + g * kRows * ldo_w, sums[q][g], n, ldo_w);
    }
  }
}

// The DotTileFn contract for up to 32 f16 weight rows and up to 8 activation rows held as f32
// (f16 values: kPackedF16's layout), k a multiple of 16 up to kMaxK.
void cells_tile(int64_t k, const uint8_t* w, size_t ldw, int nw, const uint8_t* a, size_t lda,
                int na, float* out, int64_t ldo_w, int64_t ldo_a) {
  alignas(64) float cols[kMaxK * kGroups * kRows];
  transpose_rows(k, w, ldw, nw, cols);
  for (int c = 0; c < na; c += kQueries) {
    // A missing activation row repeats the last one; its outputs are not stored.
    const float* rows[kQueries];
    for (int q = 0; q < kQueries; ++q) {
      rows[q] =
          reinterpret_cast<const float*>(a + static_cast<size_t>(std::min(c + q, na - 1)) * lda);
    }
    __m512 sums[kQueries][kGroups];
    outputs<kGroups, kQueries>(k, cols, rows, sums);
    store_outputs(sums, c, std::min(kQueries, na - c), nw, out, ldo_w, ldo_a);
  }
}

// Q activation rows' outputs against the transposed rows, each one chain of multiply-adds over
// the elements in order (no lanes to sum): every broadcast element feeds kGroups registers of
// rows, each loaded column Q activation rows.
template <int Q>
void chained_outputs(int64_t k, const float* cols, const float* const* a, __m512 sums[][kGroups]) {
  constexpr int kWidth = kGroups * kRows;
  for (int q = 0; q < Q; ++q) {
    for (int g = 0; g < kGroups; ++g) sums[q][g] = _mm512_setzero_ps();
  }
  for (int64_t d = 0; d < k; ++d) {
    __m512 col[kGroups];
    for (int g = 0; g < kGroups; ++g) col[g] = _mm512_load_ps(cols + d * kWidth + g * kRows);
    for (int q = 0; q < Q; ++q) {
      const __m512 b = _mm512_set1_ps(a[q][d]);
      for (int g = 0; g < kGroups; ++g) sums[q][g] = _mm512_fmadd_ps(col[g], b, sums[q][g]);
    }
  }
}

// cells_tile's contract with each output summed in element order, one multiply-add after
// another: flash attention's scores. Without the 16 lanes to add up, a block of 32 cells against
// 8 query rows takes half the loads of the columns and none of the lane sums.
void chained_tile(int64_t k, const uint8_t* w, size_t ldw, int nw, const uint8_t* a, size_t lda,
                  int na, float* out, int64_t ldo_w, int64_t ldo_a) {
  alignas(64) float cols[kMaxK * kGroups * kRows];
  transpose_rows(k, w, ldw, nw, cols);
  for (int c = 0; c < na;) {
    const float* rows[kMaxAct];
    const int left = na - c;
    for (int q = 0; q < std::min(left, kMaxAct); ++q) {
      rows[q] = reinterpret_cast<const float*>(a + static_cast<size_t>(c + q) * lda);
    }
    __m512 sums[kMaxAct][kGroups];
    int nq = 0;
    if (left >= 8) {
      chained_outputs<8>(k, cols, rows, sums);
      nq = 8;
    } else if (left >= 4) {
      chained_outputs<4>(k, cols, rows, sums);
      nq = 4;
    } else if (left >= 2) {
      chained_outputs<2>(k, cols, rows, sums);
      nq = 2;
    } else {
      chained_outputs<1>(k, cols, rows, sums);
      nq = 1;
    }
    store_outputs(sums, c, nq, nw, out, ldo_w, ldo_a);
    c += nq;
  }
}

PackedDot make_cells_f16(const PackedDot& f16, DotTileFn tile) {
  PackedDot d = f16;
  d.max_w = kGroups * kRows;
  d.max_a = kMaxAct;
  d.tile = tile;
  d.panel_bytes = nullptr;
  d.pack_panel = nullptr;
  d.panel_tile = nullptr;
  return d;
}

#endif

}  // namespace

const PackedDot* packed_dot_f16_cells(core::Type weight_type, int64_t k) {
#if defined(STRATA_CPU_AVX2) && defined(__AVX512F__)
  const PackedDot* f16 = packed_dot_f16(weight_type, k);
  if (f16 == nullptr || k > kMaxK || k % kRows != 0) return nullptr;
  static const PackedDot cells = make_cells_f16(*f16, cells_tile);
  return &cells;
#else
  (void)weight_type;
  (void)k;
  return nullptr;
#endif
}

const PackedDot* packed_dot_f16_chained(core::Type weight_type, int64_t k) {
#if defined(STRATA_CPU_AVX2) && defined(__AVX512F__)
  if (packed_dot_f16_cells(weight_type, k) == nullptr) return nullptr;
  static const PackedDot chained = make_cells_f16(*packed_dot_f16(weight_type, k), chained_tile);
  return &chained;
#else
  (void)weight_type;
  (void)k;
  return nullptr;
#endif
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
