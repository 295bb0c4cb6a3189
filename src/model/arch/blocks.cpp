#include "model/arch/blocks.h"

#include <cmath>

#include "core/ops.h"

namespace strata::model {
namespace {

using core::Tensor;

Tensor* input(core::Context& ctx, core::Type type, std::array<int64_t, 4> ne, const char* name) {
  Tensor* t = ctx.new_tensor(type, ne, name);
  t->flags |= core::kFlagInput;
  return t;
}

// Rotates Q or K heads with the layer's rope: sliding-window layers have their own base.
Tensor* rotate(const LayerBuild& b, Tensor* x, const std::string& name) {
  core::RopeParams rp;
  rp.n_dims = static_cast<int32_t>(b.hp.n_rot);
  rp.mode = b.hp.rope_mode;
  const bool swa = b.hp.is_swa(b.il);
  rp.freq_base = swa ? b.hp.rope_freq_base_swa : b.hp.rope_freq_base;
  rp.freq_scale = swa ? b.hp.rope_freq_scale_swa : b.hp.rope_freq_scale;
  return named(core::rope(b.ctx, x, b.g.positions, rp, b.w.rope_freqs), name);
}

// c * tanh(x / c), as three nodes: llama.cpp rounds each step to f32.
Tensor* soft_cap(core::Context& ctx, Tensor* x, float cap, const std::string& name) {
  Tensor* t = named(core::scale(ctx, x, 1.0f / cap), name + "_scaled");
  t = named(core::tanh(ctx, t), name + "_tanh");
  return named(core::scale(ctx, t, cap), name + "_capped");
}

}  // namespace

Tensor* named(Tensor* t, const std::string& name) {
  t->name = name;
  return t;
}

ModelGraph begin_graph(core::Context& ctx, const Hparams& hp, const BatchShape& s) {
  ModelGraph g;
  g.tokens = input(ctx, core::Type::kI32, {s.n_tokens, 1, 1, 1}, "inp_tokens");
  g.positions = input(ctx, core::Type::kI32, {s.n_tokens, 1, 1, 1}, "inp_pos");
  g.kv_slots = input(ctx, core::Type::kI32, {s.n_tokens, 1, 1, 1}, "inp_kv_slots");
  g.kq_mask = input(ctx, core::Type::kF32, {s.n_kv, s.n_tokens, 1, 1}, "inp_kq_mask");
  if (hp.n_swa > 0) {
    g.kq_mask_swa = input(ctx, core::Type::kF32, {s.n_kv, s.n_tokens, 1, 1}, "inp_kq_mask_swa");
  }
  if (s.n_outputs < s.n_tokens) {
    g.out_ids = input(ctx, core::Type::kI32, {s.n_outputs, 1, 1, 1}, "inp_out_ids");
  }
  return g;
}

Tensor* embed(core::Context& ctx, const Hparams& hp, const Weights& w, const ModelGraph& g) {
  Tensor* x = named(core::get_rows(ctx, w.tok_embd, g.tokens), "inp_embd_rows");
  if (hp.embd_scale == 0.0f) return named(x, "inp_embd");
  return named(core::scale(ctx, x, hp.embd_scale), "inp_embd");
}

Tensor* norm(core::Context& ctx, Tensor* x, Tensor* weight, float eps, const std::string& name) {
  return named(core::mul(ctx, named(core::rms_norm(ctx, x, eps), name + "_rms"), weight), name);
}

Qkv project_qkv(const LayerBuild& b, Tensor* cur) {
  const Hparams& hp = b.hp;
  const int64_t hd = hp.head_dim(), T = b.s.n_tokens;
  core::Context& ctx = b.ctx;
  const std::string& p = b.p;
  Qkv r;
  if (b.l.wqkv != nullptr) {
    // One product, read as three views: Q's rows first, then K's, then V's.
    Tensor* qkv = named(core::mul_mat(ctx, b.l.wqkv, cur), p + "qkv");
    const size_t f = sizeof(float);
    r.q = named(core::view(ctx, qkv, {hd, hp.n_head, T, 1},
                           {f, hd * f, qkv->nb[1], qkv->nb[1] * static_cast<size_t>(T)}, 0),
                p + "q_heads");
    r.k = named(core::view(ctx, qkv, {hd, hp.n_head_kv, T, 1},
                           {f, hd * f, qkv->nb[1], qkv->nb[1] * static_cast<size_t>(T)},
                           static_cast<size_t>(hp.n_embd_q()) * f),
                p + "k_heads");
    Tensor* v = named(core::view(ctx, qkv, {hp.n_embd_kv(), T, 1, 1},
                                 {f, qkv->nb[1], qkv->nb[1] * static_cast<size_t>(T),
                                  qkv->nb[1] * static_cast<size_t>(T)},
                                 static_cast<size_t>(hp.n_embd_q() + hp.n_embd_kv()) * f),
                      p + "v_part");
    r.v = named(core::cont(ctx, v), p + "v");
    return r;
  }
  auto project = [&](Tensor* wt, Tensor* bias, const std::string& name) {
    Tensor* t = named(core::mul_mat(ctx, wt, cur), p + name);
    if (bias != nullptr) t = named(core::add(ctx, t, bias), p + name + "_bias");
    return t;
  };
  r.q =
      named(core::reshape(ctx, project(b.l.wq, b.l.bq, "q"), {hd, hp.n_head, T, 1}), p + "q_heads");
  r.k = named(core::reshape(ctx, project(b.l.wk, b.l.bk, "k"), {hd, hp.n_head_kv, T, 1}),
              p + "k_heads");
  r.v = project(b.l.wv, b.l.bv, "v");
  return r;
}

Tensor* attend(const LayerBuild& b, const Qkv& in) {
  const Hparams& hp = b.hp;
  const BatchShape& s = b.s;
  core::Context& ctx = b.ctx;
  const std::string& p = b.p;
  const int64_t hd = hp.head_dim(), T = s.n_tokens;
  Tensor* k_cache = b.kv.k[static_cast<size_t>(b.il)];
  Tensor* v_cache = b.kv.v[static_cast<size_t>(b.il)];

  Tensor* q = in.q;
  Tensor* k = in.k;
  if (b.l.attn_q_norm != nullptr) q = norm(ctx, q, b.l.attn_q_norm, hp.rms_eps, p + "q_norm");
  if (b.l.attn_k_norm != nullptr) k = norm(ctx, k, b.l.attn_k_norm, hp.rms_eps, p + "k_norm");
  q = rotate(b, q, p + "q_rope");
  k = rotate(b, k, p + "k_rope");
  float kq_scale = 1.0f / std::sqrt(static_cast<float>(hd));
  if (hp.q_scale != 0.0f) {
    q = named(core::scale(ctx, q, hp.q_scale), p + "q_scaled");
    kq_scale = 1.0f;
  }

  // Reading the cache through views of the set_rows results orders the reads after the writes.
  Tensor* k_rows = named(core::reshape(ctx, k, {hp.n_embd_kv(), T, 1, 1}), p + "k_rows");
  Tensor* k_written = named(core::set_rows(ctx, k_cache, k_rows, b.g.kv_slots), p + "k_store");
  Tensor* v_written = named(core::set_rows(ctx, v_cache, in.v, b.g.kv_slots), p + "v_store");
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
  Tensor* mask = hp.is_swa(b.il) ? b.g.kq_mask_swa : b.g.kq_mask;

  Tensor* qp = named(core::permute(ctx, q, {0, 2, 1, 3}), p + "q_perm");  // [hd, T, n_head]
  if (b.o.flash_attn) {
    // [hd, n_head, T]: heads already merged per token, no permute or copy after.
    Tensor* out = named(core::flash_attn(ctx, qp, keys, values, mask, kq_scale, hp.attn_softcap),
                        p + "fattn");
    return named(core::reshape(ctx, out, {hp.n_embd_q(), T, 1, 1}), p + "attn_merged");
  }
  // [n_kv, T, n_head]. The mask spares the scores the soft_max hides (a prompt's causal
  // future), unless a soft cap comes between them.
  Tensor* kq =
      named(core::mul_mat(ctx, keys, qp, hp.attn_softcap == 0.0f ? mask : nullptr), p + "kq");
  if (hp.attn_softcap != 0.0f) kq = soft_cap(ctx, kq, hp.attn_softcap, p + "kq");
  kq = named(core::soft_max(ctx, kq, mask, kq_scale), p + "kq_soft_max");
  Tensor* vt = named(core::transpose(ctx, values), p + "v_t");  // [n_kv, hd, n_head_kv]
  Tensor* kqv = named(core::mul_mat(ctx, vt, kq), p + "kqv");   // [hd, T, n_head]
  Tensor* merged =
      named(core::cont(ctx, named(core::permute(ctx, kqv, {0, 2, 1, 3}), p + "kqv_perm")),
            p + "kqv_merged");
  return named(core::reshape(ctx, merged, {hp.n_embd_q(), T, 1, 1}), p + "attn_merged");
}

Tensor* ffn_swiglu(const LayerBuild& b, Tensor* cur) {
  core::Context& ctx = b.ctx;
  const std::string& p = b.p;
  Tensor* gate = nullptr;
  Tensor* up = nullptr;
  if (b.l.ffn_gate != nullptr) {
    gate = named(core::mul_mat(ctx, b.l.ffn_gate, cur), p + "ffn_gate");
    up = named(core::mul_mat(ctx, b.l.ffn_up, cur), p + "ffn_up");
  } else {
    // Gate and up fused: the first half of each row is the gate.
    Tensor* both = named(core::mul_mat(ctx, b.l.ffn_up, cur), p + "ffn_gate_up");
    const int64_t ff = both->ne[0] / 2, T = both->ne[1];
    const size_t f = sizeof(float);
    const core::Strides nb = {f, both->nb[1], both->nb[1] * static_cast<size_t>(T),
                              both->nb[1] * static_cast<size_t>(T)};
    gate = named(
        core::cont(ctx, named(core::view(ctx, both, {ff, T, 1, 1}, nb, 0), p + "ffn_gate_part")),
        p + "ffn_gate");
    up = named(
        core::cont(ctx, named(core::view(ctx, both, {ff, T, 1, 1}, nb, static_cast<size_t>(ff) * f),
                              p + "ffn_up_part")),
        p + "ffn_up");
  }
  Tensor* act = named(core::swiglu(ctx, gate, up), p + "ffn_swiglu");
  return named(core::mul_mat(ctx, b.l.ffn_down, act), p + "ffn_out");
}

Tensor* ffn_geglu(const LayerBuild& b, Tensor* cur) {
  core::Context& ctx = b.ctx;
  const std::string& p = b.p;
  Tensor* gate = named(core::mul_mat(ctx, b.l.ffn_gate, cur), p + "ffn_gate");
  Tensor* up = named(core::mul_mat(ctx, b.l.ffn_up, cur), p + "ffn_up");
  Tensor* act =
      named(core::mul(ctx, named(core::gelu(ctx, gate), p + "ffn_gelu"), up), p + "ffn_geglu");
  return named(core::mul_mat(ctx, b.l.ffn_down, act), p + "ffn_out");
}

Tensor* ffn_moe(const LayerBuild& b, Tensor* cur) {
  core::Context& ctx = b.ctx;
  const std::string& p = b.p;
  const Hparams& hp = b.hp;
  const int64_t T = cur->ne[1], n_used = hp.n_expert_used;
  // Route: softmax over the experts, the top n_used of each token, their weights renormalized.
  Tensor* logits = named(core::mul_mat(ctx, b.l.ffn_gate_inp, cur), p + "ffn_moe_logits");
  Tensor* probs = named(core::soft_max(ctx, logits, nullptr, 1.0f), p + "ffn_moe_probs");
  Tensor* chosen = named(core::top_k(ctx, probs, n_used), p + "ffn_moe_topk");  // [n_used, T]
  Tensor* weights = named(
      core::get_rows(
          ctx, named(core::reshape(ctx, probs, {1, hp.n_expert, T, 1}), p + "ffn_moe_p3"), chosen),
      p + "ffn_moe_weights");  // [1, n_used, T]
  Tensor* w2 = named(core::reshape(ctx, weights, {n_used, T, 1, 1}), p + "ffn_moe_weights_2d");
  Tensor* sum = named(core::sum_rows(ctx, w2), p + "ffn_moe_weights_sum");
  w2 = named(core::div(ctx, w2, sum), p + "ffn_moe_weights_norm");
  weights = named(core::reshape(ctx, w2, {1, n_used, T, 1}), p + "ffn_moe_weights_3d");

  // Every chosen expert's SwiGLU FFN, one mul_mat_id per matrix for all tokens and slots.
  Tensor* x = named(core::reshape(ctx, cur, {hp.n_embd, 1, T, 1}), p + "ffn_moe_in");
  Tensor* up = named(core::mul_mat_id(ctx, b.l.ffn_up_exps, x, chosen), p + "ffn_moe_up");
  Tensor* gate = named(core::mul_mat_id(ctx, b.l.ffn_gate_exps, x, chosen), p + "ffn_moe_gate");
  Tensor* act = named(core::swiglu(ctx, gate, up), p + "ffn_moe_swiglu");
  Tensor* down = named(core::mul_mat_id(ctx, b.l.ffn_down_exps, act, chosen), p + "ffn_moe_down");
  down = named(core::mul(ctx, down, weights), p + "ffn_moe_weighted");  // [n_embd, n_used, T]

  // Sum the slots in order, as llama.cpp adds its views.
  const core::Strides nb = {down->nb[0], down->nb[2], down->nb[2] * static_cast<size_t>(T),
                            down->nb[2] * static_cast<size_t>(T)};
  Tensor* out = nullptr;
  for (int64_t i = 0; i < n_used; ++i) {
    Tensor* slot =
        named(core::view(ctx, down, {hp.n_embd, T, 1, 1}, nb, static_cast<size_t>(i) * down->nb[1]),
              p + "ffn_moe_slot" + std::to_string(i));
    out = out == nullptr ? slot
                         : named(core::add(ctx, out, slot), p + "ffn_moe_sum" + std::to_string(i));
  }
  if (n_used == 1) out = core::cont(ctx, out);
  return named(out, p + "ffn_out");
}

void select_output_rows(const LayerBuild& b, Tensor*& cur, Tensor*& residual) {
  if (b.il != b.hp.n_layer - 1 || b.g.out_ids == nullptr) return;
  cur = named(core::get_rows(b.ctx, cur, b.g.out_ids), b.p + "attn_out_rows");
  residual = named(core::get_rows(b.ctx, residual, b.g.out_ids), b.p + "inp_rows");
}

void finish_graph(core::Context& ctx, const Hparams& hp, const Weights& w, Tensor* x,
                  ModelGraph& g) {
  Tensor* out = norm(ctx, x, w.output_norm, hp.rms_eps, "result_norm");
  g.logits = named(core::mul_mat(ctx, w.output, out), "result_output");
  if (hp.final_softcap != 0.0f) g.logits = soft_cap(ctx, g.logits, hp.final_softcap, "result");
  Tensor* outputs[] = {g.logits};
  g.graph = core::build_graph(outputs);
}

}  // namespace strata::model
