// What mul_mat may skip without changing a bit of its outputs (see mul_mat.cpp): the outputs a
// mask hides, and activation steps past a row's trailing zeros. Included by mul_mat.cpp only.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "core/tensor.h"
#include "cpu/kernels/simd.h"

namespace strata::cpu::STRATA_KERNEL_NS {

// What one mask row hides, found once per call: every entry outside [lo, hi); inside it none
// when `dense` (a prompt's causal rows), else some, read from the row itself.
struct MaskSpan {
  int32_t lo = 0, hi = 0;
  int32_t dense = 1;
  int32_t unused = 0;
};

inline MaskSpan scan_mask_row(const float* row, int64_t n) {
  MaskSpan s;
  int64_t lo = 0, hi = n;
  while (lo < n && row[lo] == -INFINITY) ++lo;
  while (hi > lo && row[hi - 1] == -INFINITY) --hi;
  for (int64_t i = lo; i < hi && s.dense != 0; ++i) s.dense = row[i] != -INFINITY;
  s.lo = static_cast<int32_t>(lo);
  s.hi = static_cast<int32_t>(hi);
  return s;
}

// Elements of x before its trailing zeros (NaNs count as nonzero).
inline int64_t nonzero_extent(const float* x, int64_t n) {
#if defined(__AVX512F__)
  while (n >= 16 &&
         _mm512_cmp_ps_mask(_mm512_loadu_ps(x + n - 16), _mm512_setzero_ps(), _CMP_NEQ_UQ) == 0) {
    n -= 16;
  }
#elif defined(STRATA_CPU_AVX2)
  while (n >= 8 && _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + n - 8), _mm256_setzero_ps(),
                                                    _CMP_NEQ_UQ)) == 0) {
    n -= 8;
  }
#endif
  while (n > 0 && x[n - 1] == 0.0f) --n;
  return n;
}

// The outputs a mask hides in one tile: bit i of bits[j] for weight row iw + i against
// activation row ia + j (nw <= 64). The spans settle most tiles (wholly hidden, or wholly
// seen) without reading the mask, whose column walk would miss the cache tile after tile.
struct TileMask {
  const core::Tensor* mask = nullptr;
  const MaskSpan* spans = nullptr;  ///< one per activation row (one in all with fold)
  bool fold = false;                ///< the activation rows are heads of one token

  /// Fills bits[0, na) and returns how many of the tile's outputs are hidden.
  int hidden(int64_t iw, int nw, int64_t ia, int na, uint64_t* bits) const {
    const uint64_t whole = nw == 64 ? ~uint64_t{0} : (uint64_t{1} << nw) - 1;
    bool all = true, none = true;
    for (int j = 0; j < na; ++j) {
      const MaskSpan& sp = spans[fold ? 0 : ia + j];
      if (iw >= sp.hi || iw + nw <= sp.lo) {
        none = false;
        continue;
      }
      all = false;
      if (sp.dense == 0 || iw < sp.lo || iw + nw > sp.hi) none = false;
    }
    if (all || none) {
      for (int j = 0; j < na; ++j) bits[j] = all ? whole : 0;
      return all ? nw * na : 0;
    }
    int count = 0;
    for (int j = 0; j < na; ++j) {
      const auto* row = reinterpret_cast<const float*>(mask->row_ptr(fold ? 0 : ia + j)) + iw;
      uint64_t b = 0;
      int i = 0;
#if defined(__AVX512F__)
      for (; i < nw; i += 16) {
        const auto lanes = static_cast<__mmask16>(nw - i >= 16 ? 0xffff : (1u << (nw - i)) - 1);
        const __m512 v = _mm512_maskz_loadu_ps(lanes, row + i);
        b |= static_cast<uint64_t>(
                 _mm512_mask_cmp_ps_mask(lanes, v, _mm512_set1_ps(-INFINITY), _CMP_EQ_OQ))
             << i;
      }
#endif
      for (; i < nw; ++i) b |= static_cast<uint64_t>(row[i] == -INFINITY) << i;
      bits[j] = b;
      count += std::popcount(b);
    }
    return count;
  }

  static void apply(const uint64_t* bits, int nw, int na, float* out, int64_t ldo_w,
                    int64_t ldo_a) {
    for (int j = 0; j < na; ++j) {
      float* o = out + j * ldo_a;
#if defined(__AVX512F__)
      if (ldo_w == 1) {
        // Whole registers with plain stores, which AMD Zen does far faster than masked ones.
        for (int i = 0; i < nw; i += 16) {
          const auto lanes = static_cast<__mmask16>(bits[j] >> i);
          if (lanes == 0xffff && nw - i >= 16) {
            _mm512_storeu_ps(o + i, _mm512_set1_ps(-INFINITY));
          } else if (lanes != 0) {
            _mm512_mask_storeu_ps(o + i, lanes, _mm512_set1_ps(-INFINITY));
          }
        }
        continue;
      }
#endif
      for (int i = 0; i < nw; ++i) {
        if ((bits[j] >> i) & 1) o[i * ldo_w] = -INFINITY;
      }
    }
  }
};

}  // namespace strata::cpu::STRATA_KERNEL_NS
