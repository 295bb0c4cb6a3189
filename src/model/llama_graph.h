// Builds the compute graph of a Llama model for one micro-batch.
#pragma once

#include <cstdint>
#include <vector>

#include "core/context.h"
#include "core/graph.h"
#include "model/llama_hparams.h"
#include "model/llama_weights.h"

namespace strata::model {

/// The KV cache as the graph sees it: per layer, K and V tensors of shape
/// [n_embd_kv, n_cells] (one row per cell), already placed by the engine.
struct KvCacheTensors {
  std::vector<core::Tensor*> k;
  std::vector<core::Tensor*> v;
};

/// Shape of one micro-batch.
struct LlamaBatchShape {
  int64_t n_tokens = 0;   ///< tokens in the micro-batch
  int64_t n_kv = 0;       ///< leading cache cells attention reads (covers this batch's cells)
  int64_t n_outputs = 0;  ///< rows of logits wanted
};

/// How the graph computes (same results up to rounding, whichever is chosen).
struct LlamaGraphOptions {
  /// Attention as one fused flash_attn node per layer (online softmax, no score matrix, any
  /// V cache type) instead of mul_mat, soft_max, mul_mat over a transposed V.
  bool flash_attn = false;
};

/// A built graph and the input tensors the caller fills before running it.
struct LlamaGraph {
  core::Graph graph;
  core::Tensor* tokens = nullptr;     ///< I32 [n_tokens]
  core::Tensor* positions = nullptr;  ///< I32 [n_tokens]
  core::Tensor* kv_slots = nullptr;   ///< I32 [n_tokens]: cache cell each token's K/V goes to
  core::Tensor* kq_mask = nullptr;    ///< F32 [n_kv, n_tokens]: 0 where visible, -inf elsewhere
  core::Tensor* out_ids =
      nullptr;  ///< I32 [n_outputs]: rows whose logits are wanted; null when all are
  core::Tensor* logits = nullptr;  ///< F32 [n_vocab, n_outputs]
};

/// Builds the graph (pure metadata). Nodes get stable names ("blk.3.attn_out"), so the same
/// shape yields the same identities on every rebuild. Check ctx.status() afterwards.
LlamaGraph build_llama_graph(core::Context& ctx, const LlamaHparams& hp, const LlamaWeights& w,
                             const KvCacheTensors& kv, const LlamaBatchShape& shape,
                             const LlamaGraphOptions& options = {});

}  // namespace strata::model
