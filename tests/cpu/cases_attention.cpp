// Cases for flash_attn: every K/V type, GQA, decode and prefill shapes, masks, query layouts.
#include "cases_attention.h"

#include <cmath>
#include <string>
#include <vector>

namespace strata::cpu::test {

using core::Context;
using core::Tensor;
using core::Type;

namespace {

// A cache of `cells` cells read through a view of its first n_kv, as the model reads it.
Tensor* cache_view(Context& ctx, Type t, const AttnShape& s, int64_t cells) {
  Tensor* cache = leaf(ctx, t, {s.head_dim * s.n_head_kv, cells, 1, 1});
  const size_t row = cache->nb[1];
  return core::view(ctx, cache, {s.head_dim, s.n_kv, s.n_head_kv, 1},
                    {cache->nb[0], row, core::row_size(t, s.head_dim), row * s.n_kv}, 0);
}

std::string shape_name(const AttnShape& s) {
  return "hd" + std::to_string(s.head_dim) + "_gqa" + std::to_string(s.n_head / s.n_head_kv) +
         "_t" + std::to_string(s.n_tokens) + "_kv" + std::to_string(s.n_kv);
}

}  // namespace

AttnOperands attn_operands(Context& ctx, Inputs& in, const AttnShape& s, Type type_k, Type type_v,
                           bool permuted_q, bool masked, int64_t cells) {
  AttnOperands op;
  if (permuted_q) {
    op.q = core::permute(ctx, f32(ctx, {s.head_dim, s.n_head, s.n_tokens, 1}), {0, 2, 1, 3});
  } else {
    op.q = f32(ctx, {s.head_dim, s.n_tokens, s.n_head, 1});
  }
  op.k = cache_view(ctx, type_k, s, cells);
  op.v = cache_view(ctx, type_v, s, cells);
  if (masked) {
    op.mask = f32(ctx, {s.n_kv + 5, s.n_tokens + 2, 1, 1});
    in.f32[op.mask] = causal_mask(s.n_kv, s.n_tokens, s.n_kv + 5, s.n_tokens + 2);
  }
  return op;
}

Tensor* unfused_attention(Context& ctx, const AttnOperands& op, float scale) {
  Tensor* kq = core::mul_mat(ctx, op.k, op.q);  // [n_kv, n_tokens, n_head]
  Tensor* mask = op.mask;
  if (mask != nullptr) mask = core::view(ctx, mask, {kq->ne[0], kq->ne[1], 1, 1}, mask->nb, 0);
  kq = core::soft_max(ctx, kq, mask, scale);
  Tensor* kqv = core::mul_mat(ctx, core::transpose(ctx, op.v), kq);  // [head_dim, n_tokens, n_head]
  return core::cont(ctx, core::permute(ctx, kqv, {0, 2, 1, 3}));
}

void attention_cases(std::vector<Case>& out) {
  constexpr Type kKvTypes[] = {Type::kF32, Type::kF16, Type::kBF16, Type::kQ8_0};
  const auto add = [&out](const std::string& name, const AttnShape& s, Type tk, Type tv,
                          bool permuted, bool masked, float scale) {
    out.push_back({name,
                   [=](Context& ctx, Inputs& in) {
                     const AttnOperands op =
                         attn_operands(ctx, in, s, tk, tv, permuted, masked, s.n_kv + 3);
                     return std::vector{core::flash_attn(ctx, op.q, op.k, op.v, op.mask, scale)};
                   },
                   kAttn});
  };
  for (Type t : kKvTypes) {
    for (int64_t gqa : {1, 4}) {
      for (int64_t n_tokens : {1, 7, 33}) {
        for (int64_t n_kv : {1, 17, 200}) {
          for (bool masked : {false, true}) {
            for (bool permuted : {false, true}) {
              const AttnShape s{64, 2 * gqa, 2, n_tokens, n_kv};
              add("flash_attn_" + tname(t) + "_" + shape_name(s) + (masked ? "_mask" : "") +
                      (permuted ? "_permuted" : ""),
                  s, t, t, permuted, masked, 0.5f);
            }
          }
        }
      }
    }
  }
  // Mixed cache types, head sizes with vector tails (40) or three q8_0 blocks (96), and the
  // usual 1/sqrt(head_dim) scale, which gives flatter distributions.
  add("flash_attn_k_q8_0_v_f16", {64, 8, 2, 7, 200}, Type::kQ8_0, Type::kF16, true, true, 0.5f);
  add("flash_attn_k_f16_v_q8_0", {64, 8, 2, 7, 200}, Type::kF16, Type::kQ8_0, true, true, 0.5f);
  for (Type t : {Type::kF32, Type::kF16, Type::kBF16}) {
    add("flash_attn_" + tname(t) + "_hd40", {40, 6, 3, 9, 70}, t, t, true, true, 0.5f);
  }
  add("flash_attn_q8_0_hd96", {96, 4, 1, 9, 70}, Type::kQ8_0, Type::kQ8_0, true, true, 0.5f);
  add("flash_attn_f16_flat", {64, 4, 4, 5, 130}, Type::kF16, Type::kF16, true, true, 0.125f);
  // Gemma 2's logit soft-capping: a cap of 50 (its attention setting) barely bends the scores;
  // 1.5 saturates most of them.
  for (float softcap : {50.0f, 1.5f}) {
    for (Type t : {Type::kF16, Type::kQ8_0}) {
      const AttnShape s{64, 8, 4, 7, 90};
      out.push_back(
          {"flash_attn_" + tname(t) + "_softcap" + std::to_string(static_cast<int>(softcap)),
           [=](Context& ctx, Inputs& in) {
             const AttnOperands op = attn_operands(ctx, in, s, t, t, true, true, s.n_kv);
             return std::vector{core::flash_attn(ctx, op.q, op.k, op.v, op.mask, 2.0f, softcap)};
           },
           kAttn});
    }
  }
  // A mask with finite values (biases) and scattered hidden cells, some rows hidden entirely.
  out.push_back({"flash_attn_f16_biased_mask",
                 [](Context& ctx, Inputs& in) {
                   const AttnShape s{64, 4, 2, 6, 150};
                   AttnOperands op =
                       attn_operands(ctx, in, s, Type::kF16, Type::kF16, true, false, s.n_kv);
                   op.mask = f32(ctx, {s.n_kv, s.n_tokens, 1, 1});
                   std::vector<float> m = uniform(s.n_kv * s.n_tokens, -3.0f, 1.0f, 71);
                   const auto hide = random_ints(300, 0, static_cast<int32_t>(m.size()), 72);
                   for (int32_t i : hide) m[static_cast<size_t>(i)] = -INFINITY;
                   for (int64_t j = 0; j < s.n_kv; ++j) {
                     m[static_cast<size_t>(2 * s.n_kv + j)] = -INFINITY;
                   }
                   in.f32[op.mask] = m;
                   return std::vector{core::flash_attn(ctx, op.q, op.k, op.v, op.mask, 0.5f)};
                 },
                 kAttn});
  // Scores given their mask, as the engine's unfused attention gives it: hidden ones -inf, the
  // rest mul_mat's products (decode's folded heads, a prompt's causal rows, both head sizes of
  // f16's kernels); then the unfused attention through them.
  for (Type t : kKvTypes) {
    for (const AttnShape& s : {AttnShape{64, 8, 2, 1, 200}, AttnShape{64, 8, 2, 33, 200},
                               AttnShape{256, 4, 2, 20, 70}}) {
      out.push_back({"mul_mat_masked_scores_" + tname(t) + "_" + shape_name(s),
                     [=](Context& ctx, Inputs& in) {
                       const AttnOperands op = attn_operands(ctx, in, s, t, t, true, true, s.n_kv);
                       return std::vector{core::mul_mat(ctx, op.k, op.q, op.mask)};
                     },
                     kDot, kDotFloor});
    }
    if (t == Type::kQ8_0) continue;  // the unfused product with V takes float caches
    const AttnShape s{64, 8, 2, 33, 200};
    out.push_back({"unfused_attention_masked_scores_" + tname(t) + "_" + shape_name(s),
                   [=](Context& ctx, Inputs& in) {
                     const AttnOperands op = attn_operands(ctx, in, s, t, t, true, true, s.n_kv);
                     Tensor* kq = core::mul_mat(ctx, op.k, op.q, op.mask);
                     kq = core::soft_max(ctx, kq, op.mask, 0.5f);
                     Tensor* kqv = core::mul_mat(ctx, core::transpose(ctx, op.v), kq);
                     return std::vector{core::cont(ctx, core::permute(ctx, kqv, {0, 2, 1, 3}))};
                   },
                   kChain});  // scores summed in f32, not double, flip f16/bf16 roundings of P
  }
}

}  // namespace strata::cpu::test
