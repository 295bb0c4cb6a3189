// The pre-norm decoder block that Llama, Qwen2, Qwen3 and Phi-3 share: RMS norm, attention,
// residual; RMS norm, FFN (SwiGLU or mixture of experts), residual. What differs between them
// (biases, fused projections, Q/K norms, rope mode, experts) is in their weights and hparams.
#pragma once

#include "core/context.h"
#include "model/arch/graph.h"
#include "model/arch/hparams.h"
#include "model/arch/weights.h"

namespace strata::model {

ModelGraph build_prenorm_decoder(core::Context& ctx, const Hparams& hp, const Weights& w,
                                 const KvCacheTensors& kv, const BatchShape& shape,
                                 const GraphOptions& options);

}  // namespace strata::model
