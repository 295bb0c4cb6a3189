// Cases for mul_mat_id and the mixture-of-experts FFN built from it (llama.cpp's build_moe_ffn).
#include <string>
#include <vector>

#include "conformance_cases.h"

namespace strata::cpu::test {

using core::Context;
using core::Tensor;
using core::Type;

namespace {

// The types the MoE GGUFs in use store their experts in, and the rest of mul_mat's.
std::vector<Case> mul_mat_id_cases_for(Type t) {
  std::vector<Case> out;
  const std::string p = "mul_mat_id_" + tname(t) + "_";
  const int64_t k = fit_k(t, 96);
  const auto add = [&](const std::string& name, auto build) {
    out.push_back({p + name, build, kDot, kDotFloor});
  };
  // One activation row per token shared by its slots (up / gate projections).
  add("shared_x", [=](Context& ctx, Inputs& in) {
    Tensor* ids = ids_leaf(ctx, in, random_ints(3 * 5, 0, 4, 81), {3, 5, 1, 1});
    return std::vector{
        core::mul_mat_id(ctx, leaf(ctx, t, {k, 33, 4, 1}), f32(ctx, {k, 1, 5, 1}), ids)};
  });
  // One activation row per slot (the down projection), an expert picked twice by a token.
  add("per_slot_x", [=](Context& ctx, Inputs& in) {
    Tensor* ids = ids_leaf(ctx, in, {0, 3, 3, 1, 2, 0, 2, 2, 1, 3, 0, 1}, {3, 4, 1, 1});
    return std::vector{
        core::mul_mat_id(ctx, leaf(ctx, t, {k, 7, 4, 1}), f32(ctx, {k, 3, 4, 1}), ids)};
  });
  add("decode", [=](Context& ctx, Inputs& in) {
    Tensor* ids = ids_leaf(ctx, in, {5, 1}, {2, 1, 1, 1});
    return std::vector{
        core::mul_mat_id(ctx, leaf(ctx, t, {k, 130, 8, 1}), f32(ctx, {k, 1, 1, 1}), ids)};
  });
  // Over 64 rows for one expert (several activation chunks), some experts unused.
  add("prefill_skewed", [=](Context& ctx, Inputs& in) {
    std::vector<int32_t> v = random_ints(2 * 45, 0, 8, 82);
    for (size_t i = 0; i < v.size(); i += 2) v[i] = 6;
    Tensor* ids = ids_leaf(ctx, in, v, {2, 45, 1, 1});
    return std::vector{
        core::mul_mat_id(ctx, leaf(ctx, t, {k, 70, 8, 1}), f32(ctx, {k, 1, 45, 1}), ids)};
  });
  // Activations through views: strided rows (a permuted slot/token layout) and strided elements.
  add("x_permuted", [=](Context& ctx, Inputs& in) {
    Tensor* ids = ids_leaf(ctx, in, random_ints(2 * 3, 0, 4, 83), {2, 3, 1, 1});
    Tensor* x = core::permute(ctx, f32(ctx, {k, 3, 2, 1}), {0, 2, 1, 3});
    return std::vector{core::mul_mat_id(ctx, leaf(ctx, t, {k, 9, 4, 1}), x, ids)};
  });
  add("x_transposed", [=](Context& ctx, Inputs& in) {
    Tensor* ids = ids_leaf(ctx, in, random_ints(2 * 3, 0, 4, 84), {2, 3, 1, 1});
    Tensor* xt = core::transpose(ctx, f32(ctx, {3, k, 1, 1}));  // [k, 3] with strided elements
    Tensor* x = core::view(ctx, xt->view_src, {k, 1, 3, 1},
                           {xt->nb[0], xt->nb[1], xt->nb[1], xt->nb[1] * 3}, 0);
    return std::vector{core::mul_mat_id(ctx, leaf(ctx, t, {k, 9, 4, 1}), x, ids)};
  });
  return out;
}

// build_moe_ffn: router logits -> top_k -> softmax weights -> experts (gate, up, down) ->
// weighted sum over the slots through views, as llama.cpp builds it.
std::vector<Tensor*> moe_ffn(Context& ctx, Inputs& in, Type t) {
  const int64_t embd = fit_k(t, 64), ff = fit_k(t, 96);
  constexpr int64_t kExperts = 4, kUsed = 2, kTokens = 6;
  Tensor* x = f32(ctx, {embd, kTokens, 1, 1});
  Tensor* logits = f32(ctx, {kExperts, kTokens, 1, 1});
  in.f32[logits] = uniform(kExperts * kTokens, -3.0f, 3.0f, 85);
  Tensor* probs = core::soft_max(ctx, logits, nullptr, 1.0f);
  Tensor* selected = core::top_k(ctx, logits, kUsed);  // [n_used, T]
  Tensor* weights =
      core::get_rows(ctx, core::reshape(ctx, probs, {1, kExperts, kTokens, 1}), selected);
  Tensor* total = core::sum_rows(ctx, core::reshape(ctx, weights, {kUsed, kTokens, 1, 1}));
  weights = core::div(ctx, weights, core::reshape(ctx, total, {1, 1, kTokens, 1}));
  Tensor* xr = core::reshape(ctx, x, {embd, 1, kTokens, 1});
  Tensor* up = core::mul_mat_id(ctx, leaf(ctx, t, {embd, ff, kExperts, 1}), xr, selected);
  Tensor* gate = core::mul_mat_id(ctx, leaf(ctx, t, {embd, ff, kExperts, 1}), xr, selected);
  Tensor* experts = core::mul_mat_id(ctx, leaf(ctx, t, {ff, embd, kExperts, 1}),
                                     core::swiglu(ctx, gate, up), selected);  // [embd, used, T]
  experts = core::mul(ctx, experts, core::reshape(ctx, weights, {1, kUsed, kTokens, 1}));
  Tensor* sum = nullptr;
  for (int64_t i = 0; i < kUsed; ++i) {
    Tensor* slot = core::view(
        ctx, experts, {embd, kTokens, 1, 1},
        {experts->nb[0], experts->nb[2], experts->nb[2] * kTokens, experts->nb[2] * kTokens},
        static_cast<size_t>(i) * experts->nb[1]);
    sum = sum == nullptr ? slot : core::add(ctx, sum, slot);
  }
  return {core::add(ctx, x, sum), selected};
}

}  // namespace

void moe_cases(std::vector<Case>& out) {
  for (Type t : kWeightTypes) {
    for (Case& c : mul_mat_id_cases_for(t)) out.push_back(std::move(c));
    out.push_back({"moe_ffn_" + tname(t),
                   [t](Context& ctx, Inputs& in) { return moe_ffn(ctx, in, t); }, kChain,
                   kDotFloor});
  }
}

}  // namespace strata::cpu::test
