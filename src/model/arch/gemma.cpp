// Gemma 2 and Gemma 3: embeddings scaled by sqrt(n_embd); each block norms its attention and
// FFN outputs as well as their inputs ("sandwich" norms); GELU-gated FFN; NEOX rope; Q scaled
// before the scores; sliding-window attention on some layers (Gemma 2: every other one;
// Gemma 3: five of every six, with their own rope base). Gemma 2 soft-caps the attention scores
// and the logits; Gemma 3 RMS-normalizes each Q and K head instead.
#include <cmath>
#include <string>

#include "core/ops.h"
#include "model/arch/architecture.h"
#include "model/arch/block_weights.h"
#include "model/arch/blocks.h"

namespace strata::model {
namespace {

// Layers il with il % period < period - 1 use the sliding window (llama.cpp's swa pattern).
void set_swa_pattern(Hparams& hp, int64_t period) {
  hp.swa_layers.assign(static_cast<size_t>(hp.n_layer), false);
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    hp.swa_layers[static_cast<size_t>(il)] = il % period < period - 1;
  }
}

Status configure_common(const gguf::File& f, Hparams& hp, int64_t big_model_layers) {
  hp.rope_mode = core::RopeMode::kNeox;
  hp.embd_scale = std::sqrt(static_cast<float>(hp.n_embd));
  // The largest models scale by the model width's head size rather than the actual one.
  const int64_t scale_dim = hp.n_layer == big_model_layers ? hp.n_embd / hp.n_head : hp.head_dim();
  hp.q_scale = 1.0f / std::sqrt(static_cast<float>(scale_dim));
  auto window = read_positive(f, hp.arch + ".attention.sliding_window", 4096);
  if (!window.ok()) return window.status();
  hp.n_swa = *window;
  hp.rope_freq_base_swa = hp.rope_freq_base;
  hp.rope_freq_scale_swa = hp.rope_freq_scale;
  return {};
}

Status configure_gemma2(const gguf::File& f, Hparams& hp) {
  STRATA_RETURN_IF_ERROR(configure_common(f, hp, 46));
  set_swa_pattern(hp, 2);
  auto attn = read_real(f, "gemma2.attn_logit_softcapping", 50.0f);
  if (!attn.ok()) return attn.status();
  auto final_cap = read_real(f, "gemma2.final_logit_softcapping", 30.0f);
  if (!final_cap.ok()) return final_cap.status();
  if (!(*attn > 0.0f) || !(*final_cap > 0.0f)) {
    return error(ErrorCode::kMalformed, "model: gemma2 soft-capping values must be positive");
  }
  hp.attn_softcap = *attn;
  hp.final_softcap = *final_cap;
  return {};
}

Status configure_gemma3(const gguf::File& f, Hparams& hp) {
  STRATA_RETURN_IF_ERROR(configure_common(f, hp, 62));
  set_swa_pattern(hp, 6);
  // Local layers rotate with the original base and no scaling, whatever the global ones use.
  hp.rope_freq_base_swa = 10000.0f;
  hp.rope_freq_scale_swa = 1.0f;
  return {};
}

void declare(WeightLoader& ld, const Hparams& hp, Weights& w) {
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    ld.at_layer(il);
    LayerWeights& l = w.layers[static_cast<size_t>(il)];
    declare_attention(ld, hp, l, Fused::kNo);
    l.attn_post_norm = ld.vector_f32(ld.blk("post_attention_norm"), hp.n_embd);
    declare_ffn(ld, hp, l, Fused::kNo);
    l.ffn_post_norm = ld.vector_f32(ld.blk("post_ffw_norm"), hp.n_embd);
  }
}

ModelGraph build(core::Context& ctx, const Hparams& hp, const Weights& w, const KvCacheTensors& kv,
                 const BatchShape& s, const GraphOptions& options) {
  ModelGraph g = begin_graph(ctx, hp, s);
  core::Tensor* x = embed(ctx, hp, w, g);
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const LayerBuild b{ctx, hp,      w,  w.layers[static_cast<size_t>(il)], kv, g,
                       s,   options, il, "blk." + std::to_string(il) + "."};
    core::Tensor* cur = norm(ctx, x, b.l.attn_norm, hp.rms_eps, b.p + "attn_norm");
    cur = attend(b, project_qkv(b, cur));
    cur = named(core::mul_mat(ctx, b.l.wo, cur), b.p + "attn_out");
    cur = norm(ctx, cur, b.l.attn_post_norm, hp.rms_eps, b.p + "attn_post_norm");
    select_output_rows(b, cur, x);
    core::Tensor* ffn_in = named(core::add(ctx, cur, x), b.p + "ffn_inp");
    cur = norm(ctx, ffn_in, b.l.ffn_norm, hp.rms_eps, b.p + "ffn_norm");
    cur = ffn_geglu(b, cur);
    cur = norm(ctx, cur, b.l.ffn_post_norm, hp.rms_eps, b.p + "ffn_post_norm");
    x = named(core::add(ctx, cur, ffn_in), b.p + "l_out");
  }
  finish_graph(ctx, hp, w, x, g);
  return g;
}

}  // namespace

extern const Architecture kGemma2Architecture{"gemma2", configure_gemma2, declare, build};
extern const Architecture kGemma3Architecture{"gemma3", configure_gemma3, declare, build};

}  // namespace strata::model
