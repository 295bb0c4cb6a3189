// Shared helpers, the whole-block cases and the full table.
#include <cmath>
#include <string>
#include <vector>

#include "conformance_cases.h"

namespace strata::cpu::test {

using core::Context;
using core::Tensor;
using core::Type;

std::string tname(Type t) {
  return std::string(core::type_name(t));
}
Tensor* leaf(Context& ctx, Type t, core::Shape ne) {
  return ctx.new_tensor(t, ne);
}
Tensor* f32(Context& ctx, core::Shape ne) {
  return ctx.new_tensor(Type::kF32, ne);
}

Tensor* row_window(Context& ctx, Tensor* t, int64_t first, int64_t rows) {
  return core::view(ctx, t, {t->ne[0], rows, 1, 1}, t->nb, static_cast<size_t>(first) * t->nb[1]);
}

Tensor* ids_leaf(Context& ctx, Inputs& in, std::vector<int32_t> ids, core::Shape ne) {
  Tensor* t = ctx.new_tensor(Type::kI32, ne);
  in.i32[t] = std::move(ids);
  return t;
}

std::vector<float> uniform(int64_t n, float lo, float hi, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  const auto ints = random_ints(n, 0, 1 << 20, seed);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = lo + (hi - lo) * static_cast<float>(ints[i]) / (1 << 20);
  return v;
}

std::vector<float> causal_mask(int64_t nk, int64_t nq, int64_t width, int64_t height) {
  std::vector<float> m(static_cast<size_t>(width * height), -INFINITY);
  for (int64_t q = 0; q < nq; ++q) {
    for (int64_t k = 0; k <= nk - nq + q && k < nk; ++k)
      m[static_cast<size_t>(q * width + k)] = 0.0f;
  }
  return m;
}

namespace {

// A Llama-style block with a KV cache: every op feeding the next, views of the cache included.
// Widths are whole blocks of the weight type (256 for the K-quants).
std::vector<Tensor*> block(Context& ctx, Inputs& in, Type wtype) {
  const int64_t embd = fit_k(wtype, 128), ff = fit_k(wtype, 96);
  constexpr int64_t kHeadDim = 32, kKvHeads = 2, kTokens = 5, kCtx = 16;
  const int64_t heads = embd / kHeadDim;
  constexpr int64_t kPast = 3;  // tokens already in the cache
  Tensor* x = f32(ctx, {embd, kTokens, 1, 1});
  Tensor* pos = ids_leaf(ctx, in, {3, 4, 5, 6, 7}, {kTokens, 1, 1, 1});
  Tensor* slots = ids_leaf(ctx, in, {3, 4, 5, 6, 7}, {kTokens, 1, 1, 1});
  Tensor* mask = f32(ctx, {kCtx, kTokens, 1, 1});
  in.f32[mask] = causal_mask(kPast + kTokens, kTokens, kCtx, kTokens);
  Tensor* k_cache = leaf(ctx, Type::kF16, {kHeadDim * kKvHeads, kCtx, 1, 1});
  Tensor* v_cache = leaf(ctx, Type::kF16, {kHeadDim * kKvHeads, kCtx, 1, 1});

  Tensor* h = core::mul(ctx, core::rms_norm(ctx, x, 1e-5f), f32(ctx, {embd, 1, 1, 1}));
  Tensor* q = core::mul_mat(ctx, leaf(ctx, wtype, {embd, kHeadDim * heads, 1, 1}), h);
  Tensor* k = core::mul_mat(ctx, leaf(ctx, wtype, {embd, kHeadDim * kKvHeads, 1, 1}), h);
  Tensor* v = core::mul_mat(ctx, leaf(ctx, wtype, {embd, kHeadDim * kKvHeads, 1, 1}), h);
  const core::RopeParams rp{kHeadDim, core::RopeMode::kNormal, 10000.0f, 1.0f};
  q = core::rope(ctx, core::reshape(ctx, q, {kHeadDim, heads, kTokens, 1}), pos, rp);
  k = core::rope(ctx, core::reshape(ctx, k, {kHeadDim, kKvHeads, kTokens, 1}), pos, rp);
  Tensor* k_stored = core::set_rows(
      ctx, k_cache, core::reshape(ctx, k, {kHeadDim * kKvHeads, kTokens, 1, 1}), slots);
  Tensor* v_stored = core::set_rows(ctx, v_cache, v, slots);

  // Keys [hd, ctx, kv_heads] and values transposed [ctx, hd, kv_heads], straight from the cache.
  const int64_t n_kv = kPast + kTokens;
  Tensor* keys = core::view(ctx, k_stored, {kHeadDim, n_kv, kKvHeads, 1},
                            {2, k_cache->nb[1], kHeadDim * 2, k_cache->nb[1] * kCtx}, 0);
  Tensor* values = core::view(ctx, v_stored, {n_kv, kHeadDim, kKvHeads, 1},
                              {v_cache->nb[1], 2, kHeadDim * 2, v_cache->nb[1] * kCtx}, 0);
  Tensor* qp = core::permute(ctx, q, {0, 2, 1, 3});  // [hd, tokens, heads]
  Tensor* kq = core::mul_mat(ctx, keys, qp);         // [n_kv, tokens, heads]
  Tensor* mask_view = core::view(ctx, mask, {n_kv, kTokens, 1, 1}, mask->nb, 0);
  kq = core::soft_max(ctx, kq, mask_view, 1.0f / std::sqrt(static_cast<float>(kHeadDim)));
  Tensor* kqv = core::mul_mat(ctx, values, kq);  // [hd, tokens, heads]
  Tensor* attn = core::reshape(ctx, core::cont(ctx, core::permute(ctx, kqv, {0, 2, 1, 3})),
                               {embd, kTokens, 1, 1});
  Tensor* res = core::add(ctx, x, core::mul_mat(ctx, leaf(ctx, wtype, {embd, embd, 1, 1}), attn));

  Tensor* f = core::mul(ctx, core::rms_norm(ctx, res, 1e-5f), f32(ctx, {embd, 1, 1, 1}));
  Tensor* gate = core::mul_mat(ctx, leaf(ctx, wtype, {embd, ff, 1, 1}), f);
  Tensor* up = core::mul_mat(ctx, leaf(ctx, wtype, {embd, ff, 1, 1}), f);
  Tensor* down =
      core::mul_mat(ctx, leaf(ctx, wtype, {ff, embd, 1, 1}), core::swiglu(ctx, gate, up));
  Tensor* out = core::scale(ctx, core::add(ctx, res, down), 0.5f);
  return {out, k_cache, v_cache};
}

}  // namespace

void graph_cases(std::vector<Case>& out) {
  for (Type t : kWeightTypes) {
    out.push_back({"block_" + tname(t), [t](Context& ctx, Inputs& in) { return block(ctx, in, t); },
                   kChain, kDotFloor});
  }
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  mul_mat_cases(cases);
  data_cases(cases);
  math_cases(cases);
  graph_cases(cases);
  moe_cases(cases);
  return cases;
}

}  // namespace strata::cpu::test
