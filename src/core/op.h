// The kinds of graph node and their typed parameters.
#pragma once

#include <cstdint>
#include <string_view>
#include <variant>

namespace strata::core {

/// Every node kind. Adding one forces every switch over Op to handle it (-Werror=switch).
enum class Op : uint8_t {
  kNone,       ///< a leaf: weight, input, or cache; no computation
  kView,       ///< byte-offset view with its own shape and strides
  kReshape,    ///< same bytes, new shape (source must be contiguous)
  kPermute,    ///< axes reordered
  kTranspose,  ///< first two axes swapped
  kCpy,        ///< copy into a new contiguous tensor, converting type (cont, cast)
  kGetRows,    ///< gather rows of src0 by I32 indices src1, as F32
  kMulMat,     ///< dst[m, n] = dot(src0 row m, src1 row n), broadcast over dims 2 and 3
  kAdd,        ///< src0 + src1, src1 broadcast
  kMul,        ///< src0 * src1, src1 broadcast
  kScale,      ///< src0 * s
  kRmsNorm,    ///< x / sqrt(mean(x^2) + eps) per row
  kRope,       ///< rotary position embedding; src1 holds I32 positions
  kSoftMax,    ///< softmax(src0 * scale + mask) per row; src1 optional mask
  kSilu,       ///< x * sigmoid(x)
  kSwiglu,     ///< silu(src0) * src1
  kSetRows,    ///< writes rows of src1 into dst (src0) at I32 row indices src2
  kArgmax,     ///< index of the largest element of each row, as I32
  kFlashAttn,  ///< fused attention: softmax(scale * q k^T + mask) v, online, per (token, head)
  kGelu,       ///< tanh-approximated GELU, through f16 as llama.cpp's CPU backend computes it
  kTanh,       ///< tanhf(x)
  kSumRows,    ///< sum of each row, accumulated in double
  kDiv,        ///< src0 / src1, src1 broadcast
  kTopK,       ///< indices of each row's k largest elements, largest first, as I32
  kMulMatId,   ///< mixture-of-experts mul_mat: src0 expert src2[i, t] times src1 row (i, t)
  kCount,
};

inline constexpr int kOpCount = static_cast<int>(Op::kCount);

/// Display name of an op ("mul_mat").
std::string_view op_name(Op op);

/// True for ops that only reinterpret their source's bytes: never allocated, never computed.
inline bool is_view_op(Op op) {
  return op == Op::kView || op == Op::kReshape || op == Op::kPermute || op == Op::kTranspose;
}

struct NoParams {
  friend bool operator==(const NoParams&, const NoParams&) = default;
};
struct ScaleParams {
  float scale = 1.0f;
  friend bool operator==(const ScaleParams&, const ScaleParams&) = default;
};
struct RmsNormParams {
  float eps = 1e-5f;
  friend bool operator==(const RmsNormParams&, const RmsNormParams&) = default;
};
enum class RopeMode : uint8_t {
  kNormal,  ///< rotates adjacent pairs (x[2i], x[2i+1]): the Llama GGUF layout
  kNeox,    ///< rotates (x[i], x[i + n_dims/2])
};
struct RopeParams {
  int32_t n_dims = 0;  ///< leading elements of each head that rotate
  RopeMode mode = RopeMode::kNormal;
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;  ///< linear position scaling (1 / rope scale factor)
  friend bool operator==(const RopeParams&, const RopeParams&) = default;
};
/// The cos and sin of each rotated pair's angle at position `pos` (n_dims / 2 values each).
/// Angles follow llama.cpp exactly, rounding included, because rounding differences in q and
/// k are amplified by the f16 KV cache: theta_0 = pos, theta_{j+1} = theta_j * r in float with
/// r = powf(freq_base, -2 / n_dims), and the angle is freq_scale * theta_j.
/// `freq_factors` (n_dims / 2 values, null for none) divide each theta first, as ggml's rope with
/// frequency factors does (Llama 3.1's rope_freqs): angle_j = freq_scale * (theta_j / ff_j).
void rope_angles(const RopeParams& params, int32_t pos, float* cos_out, float* sin_out,
                 const float* freq_factors = nullptr);

/// gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2 / pi) x (1 + 0.044715 x^2))) in f32 with ggml's
/// constants and order, 1 + 0.044715 x x as one fused multiply-add (GCC contracts it so in
/// llama.cpp's -march=native build). The gelu op rounds x to f16 first and the result to f16
/// (ggml's GGML_GELU_FP16 table); see core::gelu.
float gelu_tanh(float x);

struct SoftMaxParams {
  float scale = 1.0f;
  friend bool operator==(const SoftMaxParams&, const SoftMaxParams&) = default;
};
struct PermuteParams {
  int32_t axes[4] = {0, 1, 2, 3};  ///< source axis i goes to destination axis axes[i]
  friend bool operator==(const PermuteParams&, const PermuteParams&) = default;
};
struct FlashAttnParams {
  float scale = 1.0f;  ///< applied to q·k before the mask is added (1 / sqrt(head_dim))
  /// Logit soft-capping (Gemma 2): when nonzero each score becomes
  /// softcap * tanhf(q·k * (scale / softcap)) before the mask is added; 0 disables it.
  float softcap = 0.0f;
  friend bool operator==(const FlashAttnParams&, const FlashAttnParams&) = default;
};

using OpParams = std::variant<NoParams, ScaleParams, RmsNormParams, RopeParams, SoftMaxParams,
                              PermuteParams, FlashAttnParams>;

}  // namespace strata::core
