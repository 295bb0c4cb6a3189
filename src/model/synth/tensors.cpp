#include "model/synth/tensors.h"

#include <cmath>

namespace strata::model {

int64_t SynthTensor::n_elements() const {
  int64_t n = 1;
  for (const int64_t d : ne) n *= d;
  return n;
}

// Vectors (norms, biases) take the norm role: always f32.
//
// Scales, chosen so that a random model's activations look like a trained one's:
// - token_embd ~ N(0, 1): the residual stream starts at unit RMS.
// - Norm weights are 1, so every RMS-normed input has unit RMS.
// - Every matrix reading a normed input (Q, K, V, gate, up, output) ~ N(0, 1/fan_in): its outputs
//   have unit RMS too, so attention scores q.k/sqrt(head_dim) have unit spread (softmax neither
//   saturates nor goes flat) and the logits have unit spread.
// - The matrices writing into the residual stream (attn_output, ffn_down) get a further
//   1/sqrt(2 n_layer), GPT-2's scaling: each of the 2 n_layer additions (roughly independent)
//   has variance at most 1/(2 n_layer), so the stream's RMS ends below sqrt(2) whatever the
//   depth, instead of growing like sqrt(n_layer). (SwiGLU's silu(g) * u has RMS ~0.6, so the
//   FFN adds less than that.)
std::vector<SynthTensor> plan_tensors(const Hparams& hp, const FileType& ft) {
  const int64_t e = hp.n_embd, ekv = hp.n_embd_kv(), ff = hp.n_ff, nl = hp.n_layer;
  const auto inv_sqrt = [](double x) { return static_cast<float>(1.0 / std::sqrt(x)); };
  const float in_e = inv_sqrt(static_cast<double>(e));
  const float residual = inv_sqrt(2.0 * static_cast<double>(nl));
  const float out_e = in_e * residual;
  const float out_ff = inv_sqrt(static_cast<double>(ff)) * residual;

  std::vector<SynthTensor> ts;
  auto add = [&](std::string name, WeightRole role, int64_t layer, std::vector<int64_t> ne,
                 float stddev) {
    const core::Type type = weight_type(ft, role, layer, nl, ne[0]);
    ts.push_back({std::move(name), type, std::move(ne), stddev});
  };
  add("token_embd.weight", WeightRole::kTokenEmbd, 0, {e, hp.n_vocab}, 1.0f);
  for (int64_t il = 0; il < nl; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    add(p + "attn_norm.weight", WeightRole::kNorm, il, {e}, 0.0f);
    add(p + "attn_q.weight", WeightRole::kAttnQ, il, {e, e}, in_e);
    add(p + "attn_k.weight", WeightRole::kAttnK, il, {e, ekv}, in_e);
    add(p + "attn_v.weight", WeightRole::kAttnV, il, {e, ekv}, in_e);
    if (hp.arch == "qwen2") {
      // Small biases: they shift the projections without changing their spread much.
      add(p + "attn_q.bias", WeightRole::kNorm, il, {e}, 0.1f);
      add(p + "attn_k.bias", WeightRole::kNorm, il, {ekv}, 0.1f);
      add(p + "attn_v.bias", WeightRole::kNorm, il, {ekv}, 0.1f);
    }
    if (hp.arch == "qwen3") {
      add(p + "attn_q_norm.weight", WeightRole::kNorm, il, {hp.head_dim()}, 0.0f);
      add(p + "attn_k_norm.weight", WeightRole::kNorm, il, {hp.head_dim()}, 0.0f);
    }
    add(p + "attn_output.weight", WeightRole::kAttnOutput, il, {e, e}, out_e);
    add(p + "ffn_norm.weight", WeightRole::kNorm, il, {e}, 0.0f);
    add(p + "ffn_gate.weight", WeightRole::kFfnGate, il, {e, ff}, in_e);
    add(p + "ffn_up.weight", WeightRole::kFfnUp, il, {e, ff}, in_e);
    add(p + "ffn_down.weight", WeightRole::kFfnDown, il, {ff, e}, out_ff);
  }
  add("output_norm.weight", WeightRole::kNorm, 0, {e}, 0.0f);
  add("output.weight", WeightRole::kOutput, 0, {e, hp.n_vocab}, in_e);
  return ts;
}

}  // namespace strata::model
