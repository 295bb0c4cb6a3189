#include "model/llama_graph.h"

#include <cmath>
#include <string>

#include "core/ops.h"

namespace strata::model {
namespace {

using core::Tensor;

Tensor* named(Tensor* t, const std::string& name) {
  t->name = name;
  return t;
}

Tensor* input(core::Context& ctx, core::Type type, std::array<int64_t, 4> ne, const char* name) {
  Tensor* t = ctx.new_tensor(type, ne, name);
  t->flags |= core::kFlagInput;
  return t;
}

// RMS norm times its weight; the nodes are `name` and `name`_rms.
Tensor* norm(core::Context& ctx, Tensor* x, Tensor* weight, float eps, const std::string& name) {
  return named(core::mul(ctx, named(core::rms_norm(ctx, x, eps), name + "_rms"), weight), name);
}

// Self-attention of one layer: writes this batch's K and V into the cache, then attends over
// the first n_kv cells. Returns [n_embd, n_tokens] before the output projection.
Tensor* attention(core::Context& ctx, const LlamaHparams& hp, const LlamaLayerWeights& l,
                  Tensor* k_cache, Tensor* v_cache, const LlamaGraph& g, Tensor* cur,
                  const LlamaBatchShape& s, const LlamaGraphOptions& o, const std::string& p) {
  const int64_t hd = hp.head_dim(), T = s.n_tokens;
  core::RopeParams rp;
  rp.n_dims = static_cast<int32_t>(hp.n_rot);
  rp.freq_base = hp.rope_freq_base;
  rp.freq_scale = hp.rope_freq_scale;

  Tensor* q = named(
      core::reshape(ctx, named(core::mul_mat(ctx, l.wq, cur), p + "q"), {hd, hp.n_head, T, 1}),
      p + "q_heads");
  q = named(core::rope(ctx, q, g.positions, rp), p + "q_rope");
  Tensor* k = named(
      core::reshape(ctx, named(core::mul_mat(ctx, l.wk, cur), p + "k"), {hd, hp.n_head_kv, T, 1}),
      p + "k_heads");
  k = named(core::rope(ctx, k, g.positions, rp), p + "k_rope");
  Tensor* v = named(core::mul_mat(ctx, l.wv, cur), p + "v");

  // Reading the cache through views of the set_rows results orders the reads after the writes.
  Tensor* k_rows = named(core::reshape(ctx, k, {hp.n_embd_kv(), T, 1, 1}), p + "k_rows");
  Tensor* k_written = named(core::set_rows(ctx, k_cache, k_rows, g.kv_slots), p + "k_store");
  Tensor* v_written = named(core::set_rows(ctx, v_cache, v, g.kv_slots), p + "v_store");
  const size_t row = k_cache->nb[1];
  const size_t head = core::row_size(k_cache->type, hd);
  Tensor* keys = named(core::view(ctx, k_written, {hd, s.n_kv, hp.n_head_kv, 1},
                                  {k_cache->nb[0], row, head, row * s.n_kv}, 0),
                       p + "k_view");
  Tensor* values = named(core::view(ctx, v_written, {hd, s.n_kv, hp.n_head_kv, 1},
                                    {v_cache->nb[0], v_cache->nb[1],
                                     core::row_size(v_cache->type, hd), v_cache->nb[1] * s.n_kv},
                                    0),
                         p + "v_view");

  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  Tensor* qp = named(core::permute(ctx, q, {0, 2, 1, 3}), p + "q_perm");  // [hd, T, n_head]
  if (o.flash_attn) {
    // [hd, n_head, T]: heads already merged per token, no permute or copy after.
    Tensor* out = named(core::flash_attn(ctx, qp, keys, values, g.kq_mask, scale), p + "fattn");
    return named(core::reshape(ctx, out, {hp.n_embd, T, 1, 1}), p + "attn_merged");
  }
  Tensor* kq = named(core::mul_mat(ctx, keys, qp), p + "kq");  // [n_kv, T, n_head]
  kq = named(core::soft_max(ctx, kq, g.kq_mask, scale), p + "kq_soft_max");
  Tensor* vt = named(core::transpose(ctx, values), p + "v_t");  // [n_kv, hd, n_head_kv]
  Tensor* kqv = named(core::mul_mat(ctx, vt, kq), p + "kqv");   // [hd, T, n_head]
  Tensor* merged =
      named(core::cont(ctx, named(core::permute(ctx, kqv, {0, 2, 1, 3}), p + "kqv_perm")),
            p + "kqv_merged");
  return named(core::reshape(ctx, merged, {hp.n_embd, T, 1, 1}), p + "attn_merged");
}

}  // namespace

LlamaGraph build_llama_graph(core::Context& ctx, const LlamaHparams& hp, const LlamaWeights& w,
                             const KvCacheTensors& kv, const LlamaBatchShape& s,
                             const LlamaGraphOptions& options) {
  LlamaGraph g;
  g.tokens = input(ctx, core::Type::kI32, {s.n_tokens, 1, 1, 1}, "inp_tokens");
  g.positions = input(ctx, core::Type::kI32, {s.n_tokens, 1, 1, 1}, "inp_pos");
  g.kv_slots = input(ctx, core::Type::kI32, {s.n_tokens, 1, 1, 1}, "inp_kv_slots");
  g.kq_mask = input(ctx, core::Type::kF32, {s.n_kv, s.n_tokens, 1, 1}, "inp_kq_mask");
  if (s.n_outputs < s.n_tokens) {
    g.out_ids = input(ctx, core::Type::kI32, {s.n_outputs, 1, 1, 1}, "inp_out_ids");
  }

  Tensor* x = named(core::get_rows(ctx, w.tok_embd, g.tokens), "inp_embd");
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    const LlamaLayerWeights& l = w.layers[static_cast<size_t>(il)];
    Tensor* cur = norm(ctx, x, l.attn_norm, hp.rms_eps, p + "attn_norm");
    cur = attention(ctx, hp, l, kv.k[static_cast<size_t>(il)], kv.v[static_cast<size_t>(il)], g,
                    cur, s, options, p);
    cur = named(core::mul_mat(ctx, l.wo, cur), p + "attn_out");
    if (il == hp.n_layer - 1 && g.out_ids != nullptr) {
      // Only the rows whose logits are wanted go through the last FFN and the output layer.
      cur = named(core::get_rows(ctx, cur, g.out_ids), p + "attn_out_rows");
      x = named(core::get_rows(ctx, x, g.out_ids), p + "inp_rows");
    }
    Tensor* ffn_in = named(core::add(ctx, cur, x), p + "ffn_inp");
    cur = norm(ctx, ffn_in, l.ffn_norm, hp.rms_eps, p + "ffn_norm");
    Tensor* gate = named(core::mul_mat(ctx, l.ffn_gate, cur), p + "ffn_gate");
    Tensor* up = named(core::mul_mat(ctx, l.ffn_up, cur), p + "ffn_up");
    Tensor* act = named(core::swiglu(ctx, gate, up), p + "ffn_swiglu");
    cur = named(core::mul_mat(ctx, l.ffn_down, act), p + "ffn_out");
    x = named(core::add(ctx, cur, ffn_in), p + "l_out");
  }
  Tensor* out = norm(ctx, x, w.output_norm, hp.rms_eps, "result_norm");
  g.logits = named(core::mul_mat(ctx, w.output, out), "result_output");
  Tensor* outputs[] = {g.logits};
  g.graph = core::build_graph(outputs);
  return g;
}

}  // namespace strata::model
