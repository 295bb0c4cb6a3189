#include "model/arch/block_weights.h"

namespace strata::model {

void declare_attention(WeightLoader& ld, const Hparams& hp, LayerWeights& l, Fused qkv) {
  const int64_t e = hp.n_embd, q = hp.n_embd_q(), kv = hp.n_embd_kv(), hd = hp.head_dim();
  // A K or V head stays whole on one device, and so does the group of query heads that reads
  // it (grouped-query attention), so every device attends with heads of its own.
  const int64_t group = hd * (hp.n_head_kv > 0 ? hp.n_head / hp.n_head_kv : 1);
  const WeightSplit by_head{SplitAxis::kRows, {}, hd};
  const WeightSplit by_group{SplitAxis::kRows, {}, group};
  l.attn_norm = ld.vector_f32(ld.blk("attn_norm"), e);
  if (qkv == Fused::kYes) {
    l.wqkv =
        ld.require(ld.blk("attn_qkv"), {e, q + 2 * kv, 1, 1}, {SplitAxis::kRows, {q, kv, kv}, hd});
  } else {
    l.wq = ld.require(ld.blk("attn_q"), {e, q, 1, 1}, by_group);
    l.wk = ld.require(ld.blk("attn_k"), {e, kv, 1, 1}, by_head);
    l.wv = ld.require(ld.blk("attn_v"), {e, kv, 1, 1}, by_head);
    l.bq = ld.vector_f32(ld.blk("attn_q", "bias"), q, false, by_group);
    l.bk = ld.vector_f32(ld.blk("attn_k", "bias"), kv, false, by_head);
    l.bv = ld.vector_f32(ld.blk("attn_v", "bias"), kv, false, by_head);
  }
  l.attn_q_norm = ld.vector_f32(ld.blk("attn_q_norm"), hd, false);
  l.attn_k_norm = ld.vector_f32(ld.blk("attn_k_norm"), hd, false);
  l.wo = ld.require(ld.blk("attn_output"), {q, e, 1, 1}, {SplitAxis::kColumns, {}, group});
}

void declare_ffn(WeightLoader& ld, const Hparams& hp, LayerWeights& l, Fused gate_up) {
  // The hidden features divide between devices in runs that keep the down projection's
  // quantization blocks whole; gate and up divide the same way, so their outputs line up.
  const int64_t e = hp.n_embd, ff = hp.n_ff;
  const int64_t g = ld.block_size_of(ld.blk(hp.n_expert > 0 ? "ffn_down_exps" : "ffn_down"));
  l.ffn_norm = ld.vector_f32(ld.blk("ffn_norm"), e);
  if (hp.n_expert > 0) {
    const int64_t n = hp.n_expert;
    l.ffn_gate_inp = ld.require(ld.blk("ffn_gate_inp"), {e, n, 1, 1}, {});
    l.ffn_gate_exps = ld.require(ld.blk("ffn_gate_exps"), {e, ff, n, 1}, {SplitAxis::kRows, {}, g});
    l.ffn_up_exps = ld.require(ld.blk("ffn_up_exps"), {e, ff, n, 1}, {SplitAxis::kRows, {}, g});
    l.ffn_down_exps =
        ld.require(ld.blk("ffn_down_exps"), {ff, e, n, 1}, {SplitAxis::kColumns, {}, g});
    return;
  }
  if (gate_up == Fused::kNo) {
    l.ffn_gate = ld.require(ld.blk("ffn_gate"), {e, ff, 1, 1}, {SplitAxis::kRows, {}, g});
    l.ffn_up = ld.require(ld.blk("ffn_up"), {e, ff, 1, 1}, {SplitAxis::kRows, {}, g});
  } else {
    l.ffn_up = ld.require(ld.blk("ffn_up"), {e, 2 * ff, 1, 1}, {SplitAxis::kRows, {ff, ff}, g});
  }
  l.ffn_down = ld.require(ld.blk("ffn_down"), {ff, e, 1, 1}, {SplitAxis::kColumns, {}, g});
}

}  // namespace strata::model
