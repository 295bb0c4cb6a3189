// top_k: per row, the indices of the k largest values, largest first; rows split by thread.
//
// Ties go to the lower index and NaNs rank below every number (among themselves by index), so
// the result is one total order whatever the sort does. llama.cpp's ggml_top_k (a view of a
// descending argsort by std::sort) leaves ties in an unspecified order.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "cpu/kernels/kernels.h"

namespace strata::cpu::STRATA_KERNEL_NS {

size_t top_k_work_size(const core::Tensor& dst, int nth) {
  return scratch_bytes(0, static_cast<size_t>(dst.src[0]->ne[0]) * sizeof(int32_t), nth);
}

void top_k(const core::Tensor& dst, const KernelArgs& args) {
  const core::Tensor& a = *dst.src[0];
  const int64_t n = a.ne[0];
  const int64_t k = dst.ne[0];
  auto* idx =
      reinterpret_cast<int32_t*>(thread_scratch(args, 0, static_cast<size_t>(n) * sizeof(int32_t)));
  const Range rows = split_range(a.nrows(), args.ith, args.nth);
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    const RowIndex ix = row_index(a, r);
    const uint8_t* x = a.row_ptr(ix.i1, ix.i2, ix.i3);
    const auto at = [&](int32_t i) {
      float v;
      std::memcpy(&v, x + static_cast<size_t>(i) * a.nb[0], sizeof v);
      return v;
    };
    const auto before = [&](int32_t i, int32_t j) {
      const float vi = at(i), vj = at(j);
      const bool ni = std::isnan(vi), nj = std::isnan(vj);
      if (ni != nj) return nj;
      if (!ni && vi != vj) return vi > vj;
      return i < j;
    };
    std::iota(idx, idx + n, 0);
    std::partial_sort(idx, idx + k, idx + n, before);
    uint8_t* out = dst.row_ptr(ix.i1, ix.i2, ix.i3);
    for (int64_t i = 0; i < k; ++i) {
      std::memcpy(out + static_cast<size_t>(i) * dst.nb[0], &idx[i], sizeof(int32_t));
    }
  }
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
