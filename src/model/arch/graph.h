// What every architecture's graph builder takes and gives: the KV cache as the graph sees it,
// the shape of a micro-batch, and the built graph with the inputs the engine fills.
//
// Every builder names each layer's output "blk.<N>.l_out": paged execution cuts there and
// layer fences signal there, whatever the architecture.
#pragma once

#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "core/tensor.h"

namespace strata::model {

/// The KV cache as the graph sees it: per layer, K and V tensors of shape
/// [n_embd_kv, n_cells] (one row per cell), already placed by the engine.
struct KvCacheTensors {
  std::vector<core::Tensor*> k;
  std::vector<core::Tensor*> v;
};

/// Shape of one micro-batch.
struct BatchShape {
  int64_t n_tokens = 0;   ///< tokens in the micro-batch
  int64_t n_kv = 0;       ///< leading cache cells attention reads (covers this batch's cells)
  int64_t n_outputs = 0;  ///< rows of logits wanted
};

/// How the graph computes (same results up to rounding, whichever is chosen).
struct GraphOptions {
  /// Attention as one fused flash_attn node per layer (online softmax, no score matrix, any
  /// V cache type) instead of mul_mat, soft_max, mul_mat over a transposed V.
  bool flash_attn = false;
};

/// A built graph and the input tensors the caller fills before running it.
struct ModelGraph {
  core::Graph graph;
  core::Tensor* tokens = nullptr;     ///< I32 [n_tokens]
  core::Tensor* positions = nullptr;  ///< I32 [n_tokens]
  core::Tensor* kv_slots = nullptr;   ///< I32 [n_tokens]: cache cell each token's K/V goes to
  core::Tensor* kq_mask = nullptr;    ///< F32 [n_kv, n_tokens]: 0 where visible, -inf elsewhere
  /// The same for sliding-window layers (a cell is visible only within the window); null when
  /// the model has none.
  core::Tensor* kq_mask_swa = nullptr;
  core::Tensor* out_ids =
      nullptr;  ///< I32 [n_outputs]: rows whose logits are wanted; null when all are
  core::Tensor* logits = nullptr;  ///< F32 [n_vocab, n_outputs]
};

}  // namespace strata::model
