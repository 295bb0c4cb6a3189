#include "cpu/weight_forms.h"

#include <cstring>
#include <string>

#include "core/quants/interleave.h"
#include "cpu/kernel_sets.h"

namespace strata::cpu {
namespace {

/// The grouped form of a plain type's rows, or the type itself where there is none.
core::Type grouped_form(core::Type type) {
  for (const core::Type grouped :
       {core::Type::kQ4_0x16, core::Type::kQ4_Kx16, core::Type::kQ8_0x16}) {
    if (core::plain_rows_type(grouped) == type) return grouped;
  }
  return type;
}

bool whole_groups(core::Type grouped, int64_t rows, int64_t k) {
  return rows % core::interleaved_rows(grouped) == 0 && k % core::block_size(grouped) == 0;
}

}  // namespace

core::Type host_weight_type(core::Type type, const std::array<int64_t, 4>& ne) {
  const core::Type grouped = grouped_form(type);
  if (grouped != type && ne[2] == 1 && ne[3] == 1 && whole_groups(grouped, ne[1], ne[0]) &&
      kernel_set().packed_dot(grouped, ne[0]) != nullptr) {
    return grouped;
  }
  return type;
}

Status convert_weight_rows(core::Type from, core::Type to, const void* src, void* dst, int64_t rows,
                           int64_t k) {
  if (from == to) {
    std::memcpy(dst, src, core::row_size(from, k) * static_cast<size_t>(rows));
    return {};
  }
  if (to != from && core::plain_rows_type(to) == from && whole_groups(to, rows, k)) {
    core::interleave_rows(to, src, dst, rows, k);
    return {};
  }
  return error(ErrorCode::kUnsupported, "no conversion of " + std::string(core::type_name(from)) +
                                            " weights to " + std::string(core::type_name(to)));
}

}  // namespace strata::cpu
