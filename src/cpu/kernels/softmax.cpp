// soft_max: y = softmax(x * scale + mask) per row, each row by one thread.
//
// The mask row is i1 (broadcast over dims 2 and 3). The maximum is subtracted before exp so
// nothing overflows; -inf entries give exactly 0; the sum is kept in double and its inverse
// applied in f32, as llama.cpp does (see exp_row for the order of the sum). A row whose every entry
// is -inf has no defined softmax; it comes out as zeros rather than NaNs.
#include <cmath>
#include <cstring>

#include "cpu/kernels/kernels.h"
#include "cpu/kernels/simd.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

inline float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// y[i] = e^(y[i] - max) in place over a dense row, returning the sum in double, in llama.cpp's
// order (its AVX-512 build): whole chunks of 16 go through the vector exp, each chunk summed
// in f32 in a fixed tree order and the chunk sums added in double; the last n % 16 elements
// take the C library's expf one at a time, each added in double. (Attention rows are padded
// to a multiple of 32 cells, so only short rows such as an expert router's have such a tail.)
double exp_row(float* y, int64_t n, float max) {
  double sum = 0.0;
  int64_t i = 0;
#if defined(STRATA_CPU_AVX2)
  const __m256 vmax = _mm256_set1_ps(max);
  const __m256 ninf = _mm256_set1_ps(-INFINITY);
#if defined(__AVX512F__)
  // The same chunks through the same exponential, 16 lanes at once, four chunks a step so that
  // their sums share the shuffles of one hsum16x4 (the same pairs added, so the same bits).
  // A chunk of masked cells comes out as zeros through the exponential too (e^-inf is 0) and
  // adds exactly 0: only a step of four such chunks is skipped.
  const __m512 vmax16 = _mm512_set1_ps(max);
  const __m512 ninf16 = _mm512_set1_ps(-INFINITY);
  for (; i + 64 <= n; i += 64) {
    float* p = y + i;
    __m512 x[4];
    __mmask16 masked = 0xffff;
    for (int c = 0; c < 4; ++c) {
      x[c] = _mm512_loadu_ps(p + 16 * c);
      masked &= _mm512_cmp_ps_mask(x[c], ninf16, _CMP_EQ_OQ);
    }
    if (masked == 0xffff) {
      std::memset(p, 0, 64 * sizeof(float));
      continue;
    }
    for (int c = 0; c < 4; ++c) {
      x[c] = simd::exp(_mm512_sub_ps(x[c], vmax16));
      _mm512_storeu_ps(p + 16 * c, x[c]);
    }
    float sums[4];
    simd::hsum16x4(x[0], x[1], x[2], x[3], sums);
    for (const float chunk : sums) sum += static_cast<double>(chunk);
  }
  for (; i + 16 <= n; i += 16) {
    float* p = y + i;
    const __m512 x = _mm512_loadu_ps(p);
    if (_mm512_cmp_ps_mask(x, _mm512_set1_ps(-INFINITY), _CMP_EQ_OQ) == 0xffff) {
      std::memset(p, 0, 16 * sizeof(float));
      continue;
    }
    const __m512 e = simd::exp(_mm512_sub_ps(x, vmax16));
    _mm512_storeu_ps(p, e);
    sum += static_cast<double>(simd::hsum16(e));
  }
#endif
  for (; i + 16 <= n; i += 16) {
    float* p = y + i;
    // A chunk of masked cells only (the causal future of a prompt row) is all zeros and adds
    // exactly 0 to the sum: skip the exponentials.
    const int masked = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(p), ninf, _CMP_EQ_OQ)) &
                       _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(p + 8), ninf, _CMP_EQ_OQ));
    if (masked == 0xff) {
      std::memset(p, 0, 16 * sizeof(float));
      continue;
    }
    const __m256 lo = simd::exp(_mm256_sub_ps(_mm256_loadu_ps(p), vmax));
    const __m256 hi = simd::exp(_mm256_sub_ps(_mm256_loadu_ps(p + 8), vmax));
    _mm256_storeu_ps(p, lo);
    _mm256_storeu_ps(p + 8, hi);
    sum += static_cast<double>(simd::hsum16(lo, hi));
  }
#endif
  for (; i < n; ++i) {
    y[i] = std::exp(y[i] - max);
    sum += static_cast<double>(y[i]);
  }
  return sum;
}

}  // namespace

void soft_max(const core::Tensor& dst, const KernelArgs& args) {
  const core::Tensor& a = *dst.src[0];
  const core::Tensor* mask = dst.src[1];
  const float scale = std::get<core::SoftMaxParams>(dst.params).scale;
  const int64_t n = dst.ne[0];
  // Rows are processed in place in dst, so dst rows must be dense (check_node ensures it).
  const Range rows = split_range(dst.nrows(), args.ith, args.nth);
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    const RowIndex ix = row_index(dst, r);
    const uint8_t* x = a.row_ptr(ix.i1, ix.i2, ix.i3);
    auto* y = reinterpret_cast<float*>(dst.row_ptr(ix.i1, ix.i2, ix.i3));
    const uint8_t* m = mask != nullptr ? mask->row_ptr(ix.i1) : nullptr;
    float max = -INFINITY;
    int64_t i = 0;
#if defined(STRATA_CPU_AVX2)
    if (a.nb[0] == sizeof(float) && (m == nullptr || mask->nb[0] == sizeof(float))) {
      // Dense rows (attention scores): 16 or 8 at a time, the same product then sum per element;
      // the maximum does not depend on the order of the comparisons (a NaN v keeps vmax).
      const __m256 vscale = _mm256_set1_ps(scale);
      __m256 vmax = _mm256_set1_ps(-INFINITY);
#if defined(__AVX512F__)
      const __m512 vscale16 = _mm512_set1_ps(scale);
      __m512 vmax16 = _mm512_set1_ps(-INFINITY);
      for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_mul_ps(_mm512_loadu_ps(reinterpret_cast<const float*>(x) + i), vscale16);
        if (m != nullptr) {
          v = _mm512_add_ps(v, _mm512_loadu_ps(reinterpret_cast<const float*>(m) + i));
        }
        _mm512_storeu_ps(y + i, v);
        vmax16 = _mm512_maskz_max_ps(0xffff, v, vmax16);
      }
      vmax = _mm256_max_ps(_mm512_maskz_extractf32x8_ps(0xff, vmax16, 0),
                           _mm512_maskz_extractf32x8_ps(0xff, vmax16, 1));
#endif
      for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(reinterpret_cast<const float*>(x) + i), vscale);
        if (m != nullptr) {
          v = _mm256_add_ps(v, _mm256_loadu_ps(reinterpret_cast<const float*>(m) + i));
        }
        _mm256_storeu_ps(y + i, v);
        vmax = _mm256_max_ps(v, vmax);  // a NaN v keeps vmax, as the scalar test below does
      }
      alignas(32) float lanes[8];
      _mm256_store_ps(lanes, vmax);
      for (float l : lanes) max = l > max ? l : max;
    }
#endif
    for (; i < n; ++i) {
      float v = load_f32(x + i * a.nb[0]) * scale;
      if (m != nullptr) v += load_f32(m + i * mask->nb[0]);
      y[i] = v;
      if (v > max) max = v;
    }
    if (max == -INFINITY) {
      std::memset(y, 0, static_cast<size_t>(n) * sizeof(float));
      continue;
    }
    const float inv = static_cast<float>(1.0 / exp_row(y, n, max));
    for (int64_t j = 0; j < n; ++j) y[j] *= inv;
  }
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
