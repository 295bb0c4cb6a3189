// get_rows (gather rows by I32 ids, as f32) and set_rows (scatter f32 rows by I32 ids,
// converting to the destination type).
//
// Ids are data, so they are checked here, at compute time: every thread checks all of them
// before writing anything, so a bad id fails the node with nothing written and every thread
// reports the same error.
#include <cstring>
#include <string>

#include "cpu/kernels/convert.h"
#include "cpu/kernels/kernels.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

using core::Tensor;

inline int32_t load_i32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline int32_t id_at(const Tensor& ids, int64_t i0, int64_t i1 = 0, int64_t i2 = 0) {
  return load_i32(static_cast<const uint8_t*>(ids.data) + i0 * ids.nb[0] + i1 * ids.nb[1] +
                  i2 * ids.nb[2]);
}

// Checks ids [ne0, ne1, ne2] against [0, limit).
Status check_ids(const Tensor& ids, int64_t limit, const char* op) {
  for (int64_t i2 = 0; i2 < ids.ne[2]; ++i2) {
    for (int64_t i1 = 0; i1 < ids.ne[1]; ++i1) {
      for (int64_t i0 = 0; i0 < ids.ne[0]; ++i0) {
        const int32_t id = id_at(ids, i0, i1, i2);
        if (id < 0 || id >= limit) {
          return error(ErrorCode::kOutOfRange,
                       std::string(op) + ": row id " + std::to_string(id) + " (ids[" +
                           std::to_string(i0) + ", " + std::to_string(i1) + ", " +
                           std::to_string(i2) + "]) is outside [0, " + std::to_string(limit) + ")");
        }
      }
    }
  }
  return {};
}

}  // namespace

Status get_rows(const Tensor& dst, const KernelArgs& args) {
  const Tensor& table = *dst.src[0];
  const Tensor& ids = *dst.src[1];
  STRATA_RETURN_IF_ERROR(check_ids(ids, table.ne[1], "get_rows"));
  const Range rows = split_range(dst.nrows(), args.ith, args.nth);
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    const RowIndex ix = row_index(dst, r);
    const int32_t id = id_at(ids, ix.i1, ix.i2, ix.i3);
    const uint8_t* src = table.row_ptr(id, ix.i2, ix.i3);
    auto* out = reinterpret_cast<float*>(dst.row_ptr(ix.i1, ix.i2, ix.i3));
    // Quantized tables have dense rows (check_node); gather_to_f32 takes the row path then.
    gather_to_f32(table.type, src, table.nb[0], out, dst.ne[0]);
  }
  return {};
}

size_t set_rows_work_size(const Tensor& dst, int nth) {
  const Tensor& rows = *dst.src[1];
  if (rows.nb[0] == sizeof(float)) return 0;
  return scratch_bytes(0, static_cast<size_t>(rows.ne[0]) * sizeof(float), nth);
}

// Writes go to the node itself: it is a view of src0 with src0's shape and strides.
// Each destination row belongs to one thread (id % nth), which writes its rows in source
// order; so with repeated ids the last one wins, as in a serial loop, for any thread count.
Status set_rows(const Tensor& dst, const KernelArgs& args) {
  const Tensor& rows = *dst.src[1];
  const Tensor& ids = *dst.src[2];
  STRATA_RETURN_IF_ERROR(check_ids(ids, dst.ne[1], "set_rows"));
  const int64_t n = dst.ne[0];
  auto* tmp = reinterpret_cast<float*>(
      thread_scratch(args, 0, static_cast<size_t>(rows.ne[0]) * sizeof(float)));
  for (int64_t r = 0; r < ids.ne[0]; ++r) {
    const int32_t id = id_at(ids, r);
    if (id % args.nth != args.ith) continue;
    const uint8_t* src = rows.row_ptr(r);
    const float* x = reinterpret_cast<const float*>(src);
    if (rows.nb[0] != sizeof(float)) {
      gather_to_f32(core::Type::kF32, src, rows.nb[0], tmp, n);
      x = tmp;
    }
    scatter_from_f32(dst.type, x, dst.row_ptr(id), dst.nb[0], n);
  }
  return {};
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
