// argmax: the index of the first largest element of each row, as I32; rows split by thread.
// NaNs never compare greater, so they are skipped unless a row holds nothing else (index 0).
#include <cstring>

#include "cpu/kernels/kernels.h"

namespace strata::cpu::STRATA_KERNEL_NS {

void argmax(const core::Tensor& dst, const KernelArgs& args) {
  const core::Tensor& a = *dst.src[0];
  const Range rows = split_range(a.nrows(), args.ith, args.nth);
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    const RowIndex ix = row_index(a, r);
    const uint8_t* x = a.row_ptr(ix.i1, ix.i2, ix.i3);
    int32_t best = 0;
    float best_v;
    std::memcpy(&best_v, x, sizeof best_v);
    for (int64_t i = 1; i < a.ne[0]; ++i) {
      float v;
      std::memcpy(&v, x + i * a.nb[0], sizeof v);
      // A NaN in front must not hide the real maximum behind it.
      if (v > best_v || (best_v != best_v && v == v)) {
        best_v = v;
        best = static_cast<int32_t>(i);
      }
    }
    std::memcpy(static_cast<uint8_t*>(dst.data) + r * dst.nb[0], &best, sizeof best);
  }
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
