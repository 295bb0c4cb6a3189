// The tensor table of a synthetic Llama model: names and shapes as the loader expects them,
// each tensor's type under a weight format, and the scale its random values are drawn at.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/types.h"
#include "model/arch/hparams.h"
#include "model/synth/recipe.h"

namespace strata::model {

/// One tensor of a synthetic model.
struct SynthTensor {
  std::string name;
  core::Type type = core::Type::kF32;
  std::vector<int64_t> ne;  ///< innermost first, as GGUF stores it
  float stddev = 0.0f;      ///< of the random values; 0 means every value is 1 (norm weights)

  int64_t n_elements() const;
};

/// The tensors of a model of shape `hp` (n_vocab and n_rot resolved; hp.arch one of
/// synth_architectures()) stored as `ft`, in file order: token_embd, each block's attention
/// (with Qwen2's biases, Qwen3's per-head norms) and FFN, output_norm, output. The scales keep
/// the residual stream near unit RMS through every layer (see tensors.cpp).
std::vector<SynthTensor> plan_tensors(const Hparams& hp, const FileType& ft);

}  // namespace strata::model
