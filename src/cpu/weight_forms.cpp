#include "cpu/weight_forms.h"

#include <cstring>
#include <string>

#include "core/quants/interleave.h"
#include "cpu/kernel_sets.h"

namespace strata::cpu {

core::Type host_weight_type(core::Type type, const std::array<int64_t, 4>& ne) {
  constexpr core::Type kGrouped = core::Type::kQ4_0x16;
  const bool matrix = ne[2] == 1 && ne[3] == 1 && ne[1] % core::interleaved_rows(kGrouped) == 0 &&
                      ne[0] % core::block_size(kGrouped) == 0;
  if (type == core::Type::kQ4_0 && matrix && kernel_set().packed_dot(kGrouped, ne[0]) != nullptr) {
    return kGrouped;
  }
  return type;
}

Status convert_weight_rows(core::Type from, core::Type to, const void* src, void* dst, int64_t rows,
                           int64_t k) {
  if (from == to) {
    std::memcpy(dst, src, core::row_size(from, k) * static_cast<size_t>(rows));
    return {};
  }
  if (from == core::Type::kQ4_0 && to == core::Type::kQ4_0x16 &&
      rows % core::interleaved_rows(to) == 0 && k % core::block_size(to) == 0) {
    core::interleave_q4_0x16(src, dst, rows, k);
    return {};
  }
  return error(ErrorCode::kUnsupported, "no conversion of " + std::string(core::type_name(from)) +
                                            " weights to " + std::string(core::type_name(to)));
}

}  // namespace strata::cpu
