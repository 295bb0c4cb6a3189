// The weight tensors of a Llama model, placed in memory of a chosen buffer type.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "core/context.h"
#include "core/status.h"
#include "gguf/file.h"
#include "memory/buffer.h"
#include "model/llama_hparams.h"

namespace strata::model {

struct LlamaLayerWeights {
  core::Tensor* attn_norm = nullptr;
  core::Tensor* wq = nullptr;
  core::Tensor* wk = nullptr;
  core::Tensor* wv = nullptr;
  core::Tensor* wo = nullptr;
  core::Tensor* ffn_norm = nullptr;
  core::Tensor* ffn_gate = nullptr;
  core::Tensor* ffn_up = nullptr;
  core::Tensor* ffn_down = nullptr;
};

/// Weight tensors (leafs flagged kFlagWeight) and the buffers holding them.
struct LlamaWeights {
  core::Context ctx;
  core::Tensor* tok_embd = nullptr;
  core::Tensor* output_norm = nullptr;
  core::Tensor* output = nullptr;  ///< the same tensor as tok_embd when the file ties them
  std::vector<LlamaLayerWeights> layers;
  std::vector<std::unique_ptr<memory::Buffer>> buffers;
};

/// Where each layer's weights go: layer -1 is the input (token embeddings), 0..n_layer-1 the
/// blocks, n_layer the output (final norm and output matrix).
using WeightPlacement = std::function<memory::BufferType&(int64_t layer)>;

/// Finds every tensor the architecture needs, checks its shape and type against `hp`, and
/// places it. The host buffer type gets a copy in huge pages where that pays
/// (memory::copy_to_huge_pages_pays) and uses the file mapping directly otherwise; every other
/// buffer type gets one allocation holding its layers, and running out of it is an error such as
/// "part:1 needs 812 MiB for 11 layers: ...". Failures name the tensor.
Result<std::unique_ptr<LlamaWeights>> load_llama_weights(const gguf::File& file,
                                                         const LlamaHparams& hp,
                                                         const WeightPlacement& placement);

}  // namespace strata::model
