// cpy: dst (same shape as src0) = src0 converted to dst's type, rows split across threads.
//
// Same-type copies move bytes (exact for every type, including quantized blocks and i32
// values that f32 could not hold). Conversions go through f32 one row at a time: the source
// row is read (any strides for plain types), then written with the destination type's
// rounding (core's quantizers for block types).
#include <cstring>

#include "cpu/kernels/convert.h"
#include "cpu/kernels/kernels.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

using core::Tensor;

bool dense_rows(const Tensor& t) {
  return t.nb[0] == core::type_size(t.type);
}

void copy_bytes_row(const Tensor& src, const uint8_t* s, uint8_t* d, size_t dst_stride) {
  if (dense_rows(src) && dst_stride == src.nb[0]) {
    std::memcpy(d, s, core::row_size(src.type, src.ne[0]));
    return;
  }
  const size_t ts = core::type_size(src.type);
  for (int64_t i = 0; i < src.ne[0]; ++i) std::memcpy(d + i * dst_stride, s + i * src.nb[0], ts);
}

}  // namespace

size_t cpy_work_size(const Tensor& dst, int nth) {
  const Tensor& src = *dst.src[0];
  if (src.type == dst.type) return 0;
  return scratch_bytes(0, static_cast<size_t>(src.ne[0]) * sizeof(float), nth);
}

void cpy(const Tensor& dst, const KernelArgs& args) {
  const Tensor& src = *dst.src[0];
  const int64_t n = src.ne[0];
  auto* tmp =
      reinterpret_cast<float*>(thread_scratch(args, 0, static_cast<size_t>(n) * sizeof(float)));
  const Range rows = split_range(src.nrows(), args.ith, args.nth);
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    const RowIndex ix = row_index(src, r);
    const uint8_t* s = src.row_ptr(ix.i1, ix.i2, ix.i3);
    uint8_t* d = dst.row_ptr(ix.i1, ix.i2, ix.i3);
    if (src.type == dst.type) {
      copy_bytes_row(src, s, d, dst.nb[0]);
      continue;
    }
    // Quantized sources have dense rows (check_node), which gather_to_f32 reads as a row.
    gather_to_f32(src.type, s, src.nb[0], tmp, n);
    scatter_from_f32(dst.type, tmp, d, dst.nb[0], n);
  }
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
