// Weight formats for synthetic models (`strata synth --type`): one tensor type for every
// matrix, or one of llama.cpp's mixed K-quant recipes (Q4_K_M and friends), which give the
// tensors that matter most more bits.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/types.h"

namespace strata::model {

/// How the types of a format's tensors are chosen.
enum class Recipe {
  kPure,  ///< every matrix has the base type (llama-quantize --pure)
  kQ3_K_S,
  kQ3_K_M,
  kQ3_K_L,
  kQ4_K_S,
  kQ4_K_M,
  kQ5_K_S,
  kQ5_K_M,
};

/// A weight format.
struct FileType {
  std::string_view name;  ///< "q4_k_m"
  uint32_t ftype;         ///< llama.cpp's `general.file_type` id (the closest one for pure K types)
  core::Type base;        ///< the type of the matrices no rule of the recipe singles out
  Recipe recipe;
};

/// The format called `name`; nullopt when there is none.
std::optional<FileType> find_file_type(std::string_view name);
/// Every format name, plain types first.
std::vector<std::string_view> file_type_names();

/// What a weight tensor of a Llama model is, as far as a recipe cares.
enum class WeightRole {
  kTokenEmbd,
  kOutput,
  kNorm,
  kAttnQ,
  kAttnK,
  kAttnV,
  kAttnOutput,
  kFfnGate,
  kFfnUp,
  kFfnDown,
};

/// The type of one weight under `ft`. `layer` of `n_layer` places block tensors; `row_length`
/// is the tensor's ne[0]. Norms are always f32. A type whose block does not divide the row
/// falls back as llama.cpp's quantizer does: Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0, Q2_K
/// and Q3_K to Q4_0 (llama.cpp now picks IQ4_NL, which strata lacks), anything else to F16.
core::Type weight_type(const FileType& ft, WeightRole role, int64_t layer, int64_t n_layer,
                       int64_t row_length);

}  // namespace strata::model
