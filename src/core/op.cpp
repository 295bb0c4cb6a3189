#include "core/op.h"

#include <array>

namespace strata::core {

namespace {
constexpr std::array<std::string_view, kOpCount> kOpNames = {
    "none", "view",  "reshape",  "permute", "transpose", "cpy",  "get_rows", "mul_mat",  "add",
    "mul",  "scale", "rms_norm", "rope",    "soft_max",  "silu", "swiglu",   "set_rows", "argmax",
};
static_assert(kOpNames.size() == static_cast<size_t>(Op::kCount), "every op needs a name");
}  // namespace

std::string_view op_name(Op op) {
  const auto i = static_cast<size_t>(op);
  return i < kOpNames.size() ? kOpNames[i] : "invalid";
}

}  // namespace strata::core
