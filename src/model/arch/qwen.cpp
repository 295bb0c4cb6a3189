// Qwen2 and Qwen3: the pre-norm decoder with NEOX rope. Qwen2 adds biases to Q, K and V;
// Qwen3 has none but RMS-normalizes each Q and K head, and its heads need not be
// n_embd / n_head wide (`attention.key_length`).
#include "model/arch/architecture.h"
#include "model/arch/block_weights.h"
#include "model/arch/decoder.h"

namespace strata::model {
namespace {

Status configure(const gguf::File&, Hparams& hp) {
  hp.rope_mode = core::RopeMode::kNeox;
  return {};
}

void declare(WeightLoader& ld, const Hparams& hp, Weights& w) {
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    ld.at_layer(il);
    LayerWeights& l = w.layers[static_cast<size_t>(il)];
    declare_attention(ld, hp, l, Fused::kNo);
    declare_ffn(ld, hp, l, Fused::kNo);
  }
}

}  // namespace

extern const Architecture kQwen2Architecture{"qwen2", configure, declare, build_prenorm_decoder};
extern const Architecture kQwen3Architecture{"qwen3", configure, declare, build_prenorm_decoder};

}  // namespace strata::model
