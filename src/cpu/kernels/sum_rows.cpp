// sum_rows: each row's sum accumulated in double in element order and rounded to f32 once,
// as ggml_vec_sum_f32 does; rows split by thread.
#include <cstring>

#include "cpu/kernels/kernels.h"

namespace strata::cpu::STRATA_KERNEL_NS {

void sum_rows(const core::Tensor& dst, const KernelArgs& args) {
  const core::Tensor& a = *dst.src[0];
  const Range rows = split_range(a.nrows(), args.ith, args.nth);
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    const RowIndex ix = row_index(a, r);
    const uint8_t* x = a.row_ptr(ix.i1, ix.i2, ix.i3);
    double sum = 0.0;
    for (int64_t i = 0; i < a.ne[0]; ++i) {
      float v;
      std::memcpy(&v, x + static_cast<size_t>(i) * a.nb[0], sizeof v);
      sum += static_cast<double>(v);
    }
    const auto out = static_cast<float>(sum);
    std::memcpy(dst.row_ptr(ix.i1, ix.i2, ix.i3), &out, sizeof out);
  }
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
