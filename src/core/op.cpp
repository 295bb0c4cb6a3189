#include "core/op.h"

#include <array>
#include <cmath>

namespace strata::core {

namespace {
constexpr std::array<std::string_view, kOpCount> kOpNames = {
    "none",    "view",   "reshape",  "permute", "transpose",  "cpy",  "get_rows",
    "mul_mat", "add",    "mul",      "scale",   "rms_norm",   "rope", "soft_max",
    "silu",    "swiglu", "set_rows", "argmax",  "flash_attn",
};
static_assert(kOpNames.size() == static_cast<size_t>(Op::kCount), "every op needs a name");
}  // namespace

std::string_view op_name(Op op) {
  const auto i = static_cast<size_t>(op);
  return i < kOpNames.size() ? kOpNames[i] : "invalid";
}

void rope_angles(const RopeParams& params, int32_t pos, float* cos_out, float* sin_out) {
  const float ratio = std::pow(params.freq_base, -2.0f / static_cast<float>(params.n_dims));
  float theta = static_cast<float>(pos);
  for (int32_t j = 0; j < params.n_dims / 2; ++j) {
    const float angle = params.freq_scale * theta;
    cos_out[j] = std::cos(angle);
    sin_out[j] = std::sin(angle);
    theta *= ratio;
  }
}

}  // namespace strata::core
