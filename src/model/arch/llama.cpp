// Llama (1, 2, 3.x, and Mixtral-style mixture of experts under the same name): the pre-norm
// decoder with separate Q, K, V and SwiGLU FFN, adjacent-pair rope, optional rope frequency
// factors (Llama 3.1's `rope_freqs`).
#include <string>

#include "model/arch/architecture.h"
#include "model/arch/block_weights.h"
#include "model/arch/decoder.h"

namespace strata::model {
namespace {

Status configure(const gguf::File&, Hparams& hp) {
  hp.rope_mode = core::RopeMode::kNormal;
  return {};
}

void declare(WeightLoader& ld, const Hparams& hp, Weights& w) {
  ld.at_layer(-1);
  // One tensor serves every layer; it is tiny, so it lives with the input and is copied to
  // wherever a layer needs it.
  w.rope_freqs = ld.vector_f32("rope_freqs.weight", hp.n_rot / 2, /*required=*/false);
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    ld.at_layer(il);
    declare_attention(ld, hp, w.layers[static_cast<size_t>(il)], Fused::kNo);
    declare_ffn(ld, hp, w.layers[static_cast<size_t>(il)], Fused::kNo);
  }
}

}  // namespace

extern const Architecture kLlamaArchitecture{"llama", configure, declare, build_prenorm_decoder};

}  // namespace strata::model
