// Conformance cases for flash_attn, and the graph pieces its other tests share.
#pragma once

#include <cstdint>
#include <vector>

#include "conformance_cases.h"

namespace strata::cpu::test {

// flash_attn against its reference: both round q to k's dot type identically; the kernel then
// sums the head_dim products, the probabilities and the weighted V rows in f32 (the sum of
// probabilities in double), the reference all in double, and the kernel's exp is within 2 ulp.
// Measured <= 1.1e-6 of max |out| over every case; 1e-5 leaves margin while a wrong cell, head
// or scale gives errors of O(0.1).
inline constexpr double kAttn = 1e-5;

/// The shape of one attention problem.
struct AttnShape {
  int64_t head_dim = 64;
  int64_t n_head = 4;
  int64_t n_head_kv = 4;
  int64_t n_tokens = 1;
  int64_t n_kv = 1;
};

/// The operands of an attention problem laid out as the model lays them out.
struct AttnOperands {
  core::Tensor* q = nullptr;     ///< F32 [head_dim, n_tokens, n_head] (permuted or dense)
  core::Tensor* k = nullptr;     ///< [head_dim, n_kv, n_head_kv] view of a K cache
  core::Tensor* v = nullptr;     ///< same, of a V cache
  core::Tensor* mask = nullptr;  ///< F32 causal mask, wider and taller than needed; or null
};

/// Builds q (a permuted view of [head_dim, n_head, n_tokens] when `permuted_q`), K and V caches
/// of `cells` >= n_kv cells read through views of their first n_kv cells, and (when `masked`) a
/// causal mask (0 visible, -inf hidden) of [n_kv + 5, n_tokens + 2].
AttnOperands attn_operands(core::Context& ctx, Inputs& in, const AttnShape& s, core::Type type_k,
                           core::Type type_v, bool permuted_q, bool masked, int64_t cells);

/// The unfused chain the model used before flash_attn: mul_mat(k, q), soft_max, mul_mat(v^T, p),
/// heads merged: F32 [head_dim, n_head, n_tokens] like flash_attn's output.
core::Tensor* unfused_attention(core::Context& ctx, const AttnOperands& op, float scale);

/// flash_attn over every K/V type, GQA ratio, token count, cache length, with and without a
/// mask, with dense and permuted queries.
void attention_cases(std::vector<Case>& out);

}  // namespace strata::cpu::test
