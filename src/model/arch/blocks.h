// The pieces transformer graphs are made of, shared by the architectures' builders. Each
// piece names its nodes after llama.cpp's ("blk.3.attn_out"), so identities are stable from one
// rebuild to the next and readable in scheduler and paging output.
#pragma once

#include <string>

#include "core/context.h"
#include "core/tensor.h"
#include "model/arch/graph.h"
#include "model/arch/hparams.h"
#include "model/arch/weights.h"

namespace strata::model {

core::Tensor* named(core::Tensor* t, const std::string& name);

/// The graph's inputs: tokens, positions, cache slots, masks (a sliding-window one when the
/// model has such layers) and, when fewer rows than tokens are wanted, the output rows.
ModelGraph begin_graph(core::Context& ctx, const Hparams& hp, const BatchShape& s);

/// Token embeddings of the batch, scaled by hp.embd_scale when set: "inp_embd".
core::Tensor* embed(core::Context& ctx, const Hparams& hp, const Weights& w, const ModelGraph& g);

/// RMS norm times its weight; the nodes are `name`_rms and `name`.
core::Tensor* norm(core::Context& ctx, core::Tensor* x, core::Tensor* weight, float eps,
                   const std::string& name);

/// One block being built.
struct LayerBuild {
  core::Context& ctx;
  const Hparams& hp;
  const Weights& w;
  const LayerWeights& l;
  const KvCacheTensors& kv;
  const ModelGraph& g;
  const BatchShape& s;
  const GraphOptions& o;
  int64_t il;
  std::string p;  ///< "blk.<il>."
};

/// Q [head_dim, n_head, T] and K [head_dim, n_head_kv, T] by head, V [n_embd_kv, T] by row.
struct Qkv {
  core::Tensor* q = nullptr;
  core::Tensor* k = nullptr;
  core::Tensor* v = nullptr;
};

/// Projects the normed input to Q, K and V: separate or fused matrices, plus biases.
Qkv project_qkv(const LayerBuild& b, core::Tensor* cur);

/// Self-attention of one block over the cache: per-head Q/K norms when the block has them,
/// rope (the layer's base, the model's frequency factors), the Q scale, K and V written to the
/// cache, then attention under the layer's mask with soft-capping when the model has it.
/// Returns the heads merged, [n_embd_q, T], before the output projection.
core::Tensor* attend(const LayerBuild& b, const Qkv& qkv);

/// silu(gate) * up through the down matrix: separate gate and up, or one fused matrix.
core::Tensor* ffn_swiglu(const LayerBuild& b, core::Tensor* cur);

/// Mixture of experts: a softmax router picks hp.n_expert_used experts per token (weights
/// renormalized over them), each runs its SwiGLU FFN, and the weighted outputs are summed.
core::Tensor* ffn_moe(const LayerBuild& b, core::Tensor* cur);

/// gelu(gate) * up through the down matrix (Gemma).
core::Tensor* ffn_geglu(const LayerBuild& b, core::Tensor* cur);

/// On the last block, when only some rows' logits are wanted, keeps just those rows of the
/// block's output and of its residual: the rest of the graph works on them alone.
void select_output_rows(const LayerBuild& b, core::Tensor*& cur, core::Tensor*& residual);

/// Final norm, output matrix and logit soft-capping; sets g.logits and builds g.graph.
void finish_graph(core::Context& ctx, const Hparams& hp, const Weights& w, core::Tensor* x,
                  ModelGraph& g);

}  // namespace strata::model
