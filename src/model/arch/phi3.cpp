// Phi-3 and Phi-3.5: the pre-norm decoder with Q, K and V fused in one matrix, FFN gate and up
// fused in another, NEOX rope, and Q scaled before the scores rather than the scores after.
#include <cmath>

#include "model/arch/architecture.h"
#include "model/arch/block_weights.h"
#include "model/arch/decoder.h"

namespace strata::model {
namespace {

Status configure(const gguf::File& f, Hparams& hp) {
  hp.rope_mode = core::RopeMode::kNeox;
  hp.q_scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim()));
  // The 128k-context variants rotate with per-dimension long/short factors: not read here.
  if (f.find_tensor("rope_factors_long.weight") != nullptr) {
    return error(ErrorCode::kUnsupported,
                 "model: phi3 with long-context rope factors (rope_factors_long) is not supported");
  }
  if (f.find("phi3.attention.sliding_window") != nullptr) {
    return error(ErrorCode::kUnsupported, "model: phi3 with a sliding window is not supported");
  }
  return {};
}

void declare(WeightLoader& ld, const Hparams& hp, Weights& w) {
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    ld.at_layer(il);
    LayerWeights& l = w.layers[static_cast<size_t>(il)];
    declare_attention(ld, hp, l, Fused::kYes);
    declare_ffn(ld, hp, l, Fused::kYes);
  }
}

}  // namespace

extern const Architecture kPhi3Architecture{"phi3", configure, declare, build_prenorm_decoder};

}  // namespace strata::model
