// flash_attn's products of a block's probabilities with its cells' V rows (see
// flash_attn_values.h): each output element sums p_j * v_j over the cells in order, one fused
// multiply-add after another, skipping the cells whose p_j is 0.
#include "cpu/kernels/flash_attn_values.h"

#include <algorithm>

#include "core/blocks.h"
#include "cpu/kernels/convert.h"
#include "cpu/kernels/simd.h"

namespace strata::cpu::STRATA_KERNEL_NS::flash {
namespace {

using core::Type;

// Asks for the lines of row i of `ahead`, where it has one.
[[gnu::always_inline]] inline void prefetch_row(const RowsAhead& ahead, int64_t i) {
  if (i >= ahead.n) return;
  const uint8_t* row = ahead.first + static_cast<size_t>(i) * ahead.stride;
  for (size_t b = 0; b < ahead.bytes; b += 64) simd::prefetch_stream(row + b);
}

// acc[e] += p[i] * v[i][e] for the n cells in order, skipping cells with p[i] == 0. Elements are
// independent, so the accumulator is kept in registers 32 elements at a time (one fused
// multiply-add per element and cell either way; the scalar tail rounds the product first).
void accumulate(float* acc, const float* p, const float* const* v, int64_t n, int64_t hd) {
  int64_t e = 0;
#if defined(STRATA_CPU_AVX2) && defined(__AVX512F__)
  // 64 elements (a head of 64) per pass in four 512-bit registers: half the instructions of
  // the 256-bit loop below, the same multiply-add per element and cell.
  for (; e + 64 <= hd; e += 64) {
    __m512 a0 = _mm512_loadu_ps(acc + e), a1 = _mm512_loadu_ps(acc + e + 16);
    __m512 a2 = _mm512_loadu_ps(acc + e + 32), a3 = _mm512_loadu_ps(acc + e + 48);
    for (int64_t i = 0; i < n; ++i) {
      if (p[i] == 0.0f) continue;
      const __m512 vp = _mm512_set1_ps(p[i]);
      const float* vi = v[i] + e;
      a0 = _mm512_fmadd_ps(vp, _mm512_loadu_ps(vi), a0);
      a1 = _mm512_fmadd_ps(vp, _mm512_loadu_ps(vi + 16), a1);
      a2 = _mm512_fmadd_ps(vp, _mm512_loadu_ps(vi + 32), a2);
      a3 = _mm512_fmadd_ps(vp, _mm512_loadu_ps(vi + 48), a3);
    }
    _mm512_storeu_ps(acc + e, a0);
    _mm512_storeu_ps(acc + e + 16, a1);
    _mm512_storeu_ps(acc + e + 32, a2);
    _mm512_storeu_ps(acc + e + 48, a3);
  }
#endif
#if defined(STRATA_CPU_AVX2)
  for (; e + 32 <= hd; e += 32) {
    __m256 a0 = _mm256_loadu_ps(acc + e), a1 = _mm256_loadu_ps(acc + e + 8);
    __m256 a2 = _mm256_loadu_ps(acc + e + 16), a3 = _mm256_loadu_ps(acc + e + 24);
    for (int64_t i = 0; i < n; ++i) {
      if (p[i] == 0.0f) continue;
      const __m256 vp = _mm256_set1_ps(p[i]);
      const float* vi = v[i] + e;
      a0 = _mm256_fmadd_ps(vp, _mm256_loadu_ps(vi), a0);
      a1 = _mm256_fmadd_ps(vp, _mm256_loadu_ps(vi + 8), a1);
      a2 = _mm256_fmadd_ps(vp, _mm256_loadu_ps(vi + 16), a2);
      a3 = _mm256_fmadd_ps(vp, _mm256_loadu_ps(vi + 24), a3);
    }
    _mm256_storeu_ps(acc + e, a0);
    _mm256_storeu_ps(acc + e + 8, a1);
    _mm256_storeu_ps(acc + e + 16, a2);
    _mm256_storeu_ps(acc + e + 24, a3);
  }
  for (; e + 8 <= hd; e += 8) {
    __m256 a = _mm256_loadu_ps(acc + e);
    for (int64_t i = 0; i < n; ++i) {
      if (p[i] != 0.0f) a = _mm256_fmadd_ps(_mm256_set1_ps(p[i]), _mm256_loadu_ps(v[i] + e), a);
    }
    _mm256_storeu_ps(acc + e, a);
  }
#endif
  for (; e < hd; ++e) {
    float a = acc[e];
    for (int64_t i = 0; i < n; ++i) {
      if (p[i] != 0.0f) a += p[i] * v[i][e];
    }
    acc[e] = a;
  }
}

#if defined(STRATA_CPU_AVX2) && defined(__AVX512F__)
/// V rows as f32, 16 elements at a time: rows already f32, or f16 rows converted in registers
/// (exactly, as f16_to_f32 would).
struct F32Rows {
  const void* const* v;
  [[gnu::always_inline]] __m512 load(int64_t i, int64_t e) const {
    return _mm512_loadu_ps(static_cast<const float*>(v[i]) + e);
  }
};
struct F16Rows {
  const void* const* v;
  [[gnu::always_inline]] __m512 load(int64_t i, int64_t e) const {
    return simd::load_halves16(static_cast<const core::Half*>(v[i]) + e);
  }
};

// Elements [e, e + 64) of R rows' accumulators (hd apart; their probabilities kBlock apart):
// each cell's V elements are loaded once for all R rows, which then take the same multiply-add
// per element and cell as accumulate does, in the same order, and skip the same cells (masked
// by the rows' nonzero bits: a row whose p is 0 keeps its sums; kSkips false where no p is 0,
// and then no masks). Sixteen chains of multiply-adds instead of four. With `ahead`, each cell
// also asks for the lines of one row of a later block.
template <int R, bool kSkips, class V>
void accumulate64(float* acc, const float* p, const uint32_t* nonzero, const V& v, int64_t n,
                  int64_t hd, int64_t e, const RowsAhead* ahead) {
  __m512 a[R][4];
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < 4; ++j) a[r][j] = _mm512_loadu_ps(acc + r * hd + e + 16 * j);
  }
  for (int64_t i = 0; i < n; ++i) {
    if (ahead != nullptr) prefetch_row(*ahead, i);
    const __m512 x[4] = {v.load(i, e), v.load(i, e + 16), v.load(i, e + 32), v.load(i, e + 48)};
    for (int r = 0; r < R; ++r) {
      const __m512 vp = _mm512_set1_ps(p[r * kBlock + i]);
      if constexpr (kSkips) {
        const __mmask16 take = (nonzero[r] >> i & 1u) != 0 ? 0xffff : 0;
        for (int j = 0; j < 4; ++j) a[r][j] = _mm512_mask3_fmadd_ps(vp, x[j], a[r][j], take);
      } else {
        for (int j = 0; j < 4; ++j) a[r][j] = _mm512_fmadd_ps(vp, x[j], a[r][j]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < 4; ++j) _mm512_storeu_ps(acc + r * hd + e + 16 * j, a[r][j]);
  }
}

// Each row's cells with p != 0 among the first n, as bits; returns whether any row has a 0.
bool zero_probabilities(const float* p, int rows, int64_t n, uint32_t* nonzero) {
  static_assert(kBlock == 32);
  const uint32_t all = n == 32 ? ~0u : (1u << n) - 1;
  const auto lo = static_cast<__mmask16>(all), hi = static_cast<__mmask16>(all >> 16);
  bool zeros = false;
  for (int r = 0; r < rows; ++r) {
    const float* pr = p + r * kBlock;
    const __mmask16 nz_lo = _mm512_mask_cmp_ps_mask(lo, _mm512_maskz_loadu_ps(lo, pr),
                                                    _mm512_setzero_ps(), _CMP_NEQ_UQ);
    const __mmask16 nz_hi = _mm512_mask_cmp_ps_mask(hi, _mm512_maskz_loadu_ps(hi, pr + 16),
                                                    _mm512_setzero_ps(), _CMP_NEQ_UQ);
    nonzero[r] = static_cast<uint32_t>(nz_lo) | static_cast<uint32_t>(nz_hi) << 16;
    zeros |= nonzero[r] != all;
  }
  return zeros;
}

// The first pass over the cells asks for the rows ahead, a row a cell.
template <bool kSkips, class V>
void accumulate_by_fours(float* acc, const float* p, const uint32_t* nonzero, int rows, const V& v,
                         int64_t n, int64_t hd, const RowsAhead& ahead) {
  for (int r = 0; r < rows; r += 4) {
    float* a = acc + r * hd;
    const float* pr = p + r * kBlock;
    const uint32_t* nz = nonzero + r;
    for (int64_t e = 0; e < hd; e += 64) {
      const RowsAhead* asks = r == 0 && e == 0 ? &ahead : nullptr;
      switch (std::min(4, rows - r)) {
        case 1:
          accumulate64<1, kSkips>(a, pr, nz, v, n, hd, e, asks);
          break;
        case 2:
          accumulate64<2, kSkips>(a, pr, nz, v, n, hd, e, asks);
          break;
        case 3:
          accumulate64<3, kSkips>(a, pr, nz, v, n, hd, e, asks);
          break;
        default:
          accumulate64<4, kSkips>(a, pr, nz, v, n, hd, e, asks);
          break;
      }
    }
  }
  for (int64_t i = n; i < ahead.n; ++i) prefetch_row(ahead, i);
}

// The rows' masks found once per block, for every group of four rows and 64 elements.
template <class V>
void accumulate_by_fours(float* acc, const float* p, int rows, const V& v, int64_t n, int64_t hd,
                         const RowsAhead& ahead) {
  uint32_t nonzero[kMaxRows];
  if (zero_probabilities(p, rows, n, nonzero)) {
    return accumulate_by_fours<true>(acc, p, nonzero, rows, v, n, hd, ahead);
  }
  accumulate_by_fours<false>(acc, p, nonzero, rows, v, n, hd, ahead);
}
#endif

}  // namespace

// Whether accumulate_rows reads f16 V rows where they lie, converting in registers, without
// v_row's copy.
bool reads_f16_rows(Type v_type, int64_t hd) {
#if defined(STRATA_CPU_AVX2) && defined(__AVX512F__)
  return v_type == Type::kF16 && hd % 64 == 0;
#else
  (void)v_type;
  (void)hd;
  return false;
#endif
}

// accumulate for `rows` rows (accumulators hd apart, probabilities kBlock apart): v holds the
// cells' V rows as f32, or as f16 where reads_f16_rows says so. The rows ahead are asked for a
// row at each cell of the first pass where there is one: all at once, their lines had filled
// the core's miss buffers and held up the loads behind them, as K's had in dot_cells_f16.cpp.
// With both spread, DecodeFlashAttention/4096/22 on one Zen 5 thread took 13.5 -> 12.7 ms
// (medians of 10 alternated runs); on two the change was within the noise.
void accumulate_rows(float* acc, const float* p, int rows, const void* const* v, bool f16,
                     int64_t n, int64_t hd, const RowsAhead& ahead) {
#if defined(STRATA_CPU_AVX2) && defined(__AVX512F__)
  if (hd % 64 == 0) {
    if (f16) return accumulate_by_fours(acc, p, rows, F16Rows{v}, n, hd, ahead);
    return accumulate_by_fours(acc, p, rows, F32Rows{v}, n, hd, ahead);
  }
#endif
  (void)f16;
  for (int64_t i = 0; i < ahead.n; ++i) prefetch_row(ahead, i);
  const auto* vf = reinterpret_cast<const float* const*>(v);
  for (int r = 0; r < rows; ++r) accumulate(acc + r * hd, p + r * kBlock, vf, n, hd);
}

// A V row as f32: F32 rows are used in place, the others converted into `buf`. Q8_0 values are
// d * q rounded to f32, exactly core's to_float.
const float* v_row(Type t, const uint8_t* row, float* buf, int64_t n) {
  if (t == Type::kF32) return reinterpret_cast<const float*>(row);
#if defined(STRATA_CPU_AVX2)
  if (t == Type::kQ8_0) {
    const auto* blocks = reinterpret_cast<const core::BlockQ8_0*>(row);
    for (int64_t b = 0; b < n / core::kQK8_0; ++b) {
      const __m256 d = _mm256_set1_ps(simd::half_to_float(blocks[b].d));
      for (int j = 0; j < core::kQK8_0; j += 8) {
        const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blocks[b].qs + j));
        _mm256_storeu_ps(buf + b * core::kQK8_0 + j,
                         _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8))));
      }
    }
    return buf;
  }
#endif
  row_to_f32(t, row, buf, n);
  return buf;
}

}  // namespace strata::cpu::STRATA_KERNEL_NS::flash
