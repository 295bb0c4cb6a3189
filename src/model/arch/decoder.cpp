#include "model/arch/decoder.h"

#include <string>

#include "core/ops.h"
#include "model/arch/blocks.h"

namespace strata::model {

ModelGraph build_prenorm_decoder(core::Context& ctx, const Hparams& hp, const Weights& w,
                                 const KvCacheTensors& kv, const BatchShape& s,
                                 const GraphOptions& options) {
  ModelGraph g = begin_graph(ctx, hp, s);
  core::Tensor* x = embed(ctx, hp, w, g);
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const LayerBuild b{ctx, hp,      w,  w.layers[static_cast<size_t>(il)], kv, g,
                       s,   options, il, "blk." + std::to_string(il) + "."};
    core::Tensor* cur = norm(ctx, x, b.l.attn_norm, hp.rms_eps, b.p + "attn_norm");
    cur = attend(b, project_qkv(b, cur));
    cur = named(core::mul_mat(ctx, b.l.wo, cur), b.p + "attn_out");
    select_output_rows(b, cur, x);
    core::Tensor* ffn_in = named(core::add(ctx, cur, x), b.p + "ffn_inp");
    cur = norm(ctx, ffn_in, b.l.ffn_norm, hp.rms_eps, b.p + "ffn_norm");
    cur = b.l.ffn_gate_inp != nullptr ? ffn_moe(b, cur) : ffn_swiglu(b, cur);
    x = named(core::add(ctx, cur, ffn_in), b.p + "l_out");
  }
  finish_graph(ctx, hp, w, x, g);
  return g;
}

}  // namespace strata::model
