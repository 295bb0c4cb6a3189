// rms_norm: y = x * 1/sqrt(mean(x^2) + eps) per row, each row by one thread.
//
// Numerics follow llama.cpp: the sum of squares in double, the mean rounded to f32, the scale
// in f32.
#include <cmath>
#include <cstring>

#include "cpu/kernels/kernels.h"
#include "cpu/kernels/simd.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

// The squares are rounded to f32 and added one after another in double: llama.cpp's order,
// so the scale (and every normalized value) rounds as there. The chain is serial; it costs
// about 1% of prefill.
double sum_squares(const uint8_t* x, size_t stride, int64_t n) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    float v;
    std::memcpy(&v, x + static_cast<size_t>(i) * stride, sizeof v);
    sum += static_cast<double>(v * v);
  }
  return sum;
}

}  // namespace

void rms_norm(const core::Tensor& dst, const KernelArgs& args) {
  const core::Tensor& a = *dst.src[0];
  const float eps = std::get<core::RmsNormParams>(dst.params).eps;
  const int64_t n = dst.ne[0];
  const Range rows = split_range(dst.nrows(), args.ith, args.nth);
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    const RowIndex ix = row_index(dst, r);
    const uint8_t* x = a.row_ptr(ix.i1, ix.i2, ix.i3);
    uint8_t* y = dst.row_ptr(ix.i1, ix.i2, ix.i3);
    const float mean = static_cast<float>(sum_squares(x, a.nb[0], n) / static_cast<double>(n));
    const float s = 1.0f / std::sqrt(mean + eps);
    int64_t i = 0;
#if defined(STRATA_CPU_AVX2)
    if (a.nb[0] == sizeof(float) && dst.nb[0] == sizeof(float)) {
      const __m256 vs = _mm256_set1_ps(s);
      for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(reinterpret_cast<const float*>(x) + i);
        _mm256_storeu_ps(reinterpret_cast<float*>(y) + i, _mm256_mul_ps(v, vs));
      }
    }
#endif
    for (; i < n; ++i) {
      float v;
      std::memcpy(&v, x + static_cast<size_t>(i) * a.nb[0], sizeof v);
      v *= s;
      std::memcpy(y + static_cast<size_t>(i) * dst.nb[0], &v, sizeof v);
    }
  }
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
