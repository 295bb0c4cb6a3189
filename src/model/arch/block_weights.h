// Declarations of the weights decoder blocks have in common, with their splits: attention
// (separate or fused Q/K/V, biases, per-head norms) and the FFN (SwiGLU, fused gate and up, or
// mixture of experts). Which variant a file holds is read from its tensors.
#pragma once

#include "model/arch/hparams.h"
#include "model/arch/weights.h"

namespace strata::model {

/// Whether a block's projections are separate matrices or fused into one (Phi-3).
enum class Fused : bool { kNo, kYes };

/// attn_norm, Q/K/V (separate with optional biases, or fused as attn_qkv), optional per-head
/// Q/K norms, attn_output.
void declare_attention(WeightLoader& ld, const Hparams& hp, LayerWeights& l, Fused qkv);

/// ffn_norm, then ffn_gate/ffn_up/ffn_down (fused: ffn_up holds gate and up, 2 * n_ff rows,
/// gate first); with hp.n_expert, the router and stacked experts instead.
void declare_ffn(WeightLoader& ld, const Hparams& hp, LayerWeights& l, Fused gate_up);

}  // namespace strata::model
