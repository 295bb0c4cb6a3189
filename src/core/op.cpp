#include "core/op.h"

#include <array>
#include <cmath>

namespace strata::core {

namespace {
constexpr std::array<std::string_view, kOpCount> kOpNames = {
    "none",     "view",   "reshape",  "permute",    "transpose",  "cpy",  "get_rows",
    "mul_mat",  "add",    "mul",      "scale",      "rms_norm",   "rope", "soft_max",
    "silu",     "swiglu", "set_rows", "argmax",     "flash_attn", "gelu", "tanh",
    "sum_rows", "div",    "top_k",    "mul_mat_id",
};
static_assert(kOpNames.size() == static_cast<size_t>(Op::kCount), "every op needs a name");
}  // namespace

std::string_view op_name(Op op) {
  const auto i = static_cast<size_t>(op);
  return i < kOpNames.size() ? kOpNames[i] : "invalid";
}

void rope_angles(const RopeParams& params, int32_t pos, float* cos_out, float* sin_out,
                 const float* freq_factors) {
  const float ratio = std::pow(params.freq_base, -2.0f / static_cast<float>(params.n_dims));
  float theta = static_cast<float>(pos);
  for (int32_t j = 0; j < params.n_dims / 2; ++j) {
    // Without factors the division is skipped, not done by 1, so the angles keep their bits
    // (x / 1 is exact anyway; skipping keeps the no-factor path's code unchanged).
    const float extrap = freq_factors != nullptr ? theta / freq_factors[j] : theta;
    const float angle = params.freq_scale * extrap;
    cos_out[j] = std::cos(angle);
    sin_out[j] = std::sin(angle);
    theta *= ratio;
  }
}

float gelu_tanh(float x) {
  constexpr float kCoefA = 0.044715f;
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
  const float inner = kSqrt2OverPi * x * std::fma(kCoefA * x, x, 1.0f);
  return 0.5f * x * (1.0f + std::tanh(inner));
}

}  // namespace strata::core
