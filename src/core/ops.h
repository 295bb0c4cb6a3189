// Graph-building ops: check arguments, compute the output shape, record the node.
// Nothing is allocated or computed here. A bad argument is recorded in the Context
// (see Context::status) and a placeholder tensor is returned.
#pragma once

#include <array>
#include <cstdint>

#include "core/context.h"
#include "core/tensor.h"

namespace strata::core {

using Shape = std::array<int64_t, kMaxDims>;
using Strides = std::array<size_t, kMaxDims>;

// ---- views: own no memory ----

/// A view of `a`'s bytes starting at `offset` with the given shape and strides.
Tensor* view(Context& ctx, Tensor* a, Shape ne, Strides nb, size_t offset);
/// `a` (contiguous) with a new shape of the same element count.
Tensor* reshape(Context& ctx, Tensor* a, Shape ne);
/// Axis i of `a` becomes axis axes[i] of the result.
Tensor* permute(Context& ctx, Tensor* a, std::array<int, kMaxDims> axes);
/// Swaps the first two axes.
Tensor* transpose(Context& ctx, Tensor* a);

// ---- compute ops ----

/// A dense copy of `a` in type `type` (a cast when the types differ).
Tensor* cast(Context& ctx, Tensor* a, Type type);
/// A dense copy of `a` in its own type.
Tensor* cont(Context& ctx, Tensor* a);
/// Rows of `table` ([n, rows, b2, b3], any computable type) picked by I32 `ids` ([k, b2, b3]),
/// as F32 [n, k, b2, b3].
Tensor* get_rows(Context& ctx, Tensor* table, Tensor* ids);
/// `a` [k, m, a2, a3] (any computable type) times `b` [k, n, b2, b3] (F32) -> F32 [m, n, b2, b3],
/// where b2 % a2 == 0 and b3 % a3 == 0 (a is broadcast). Activations are rounded to the
/// weight type's dot-product type first (F16 for F16, BF16 for BF16, Q8_0 for Q8_0 and Q4_0),
/// which is the numerics llama.cpp uses.
/// `mask` (F32 [>= m, >= n, 1, 1] with dense rows, or null) hides outputs: where mask[n][m] is
/// -inf the output is -inf, and its dot product need not be computed. Attention scores that the
/// masked soft_max after them would discard (the causal future of a prompt) cost nothing then,
/// and the soft_max's result is the same bits.
Tensor* mul_mat(Context& ctx, Tensor* a, Tensor* b, Tensor* mask = nullptr);
/// a + b with b broadcast along every dim where a's size is a multiple of b's. F32.
Tensor* add(Context& ctx, Tensor* a, Tensor* b);
/// a * b with the same broadcasting as add. F32.
Tensor* mul(Context& ctx, Tensor* a, Tensor* b);
/// a / b with the same broadcasting as add. F32.
Tensor* div(Context& ctx, Tensor* a, Tensor* b);
/// `as` [k, m, n_expert, 1] (stacked expert matrices: any type mul_mat takes, dense rows) times
/// `b` (F32 [k, n_b1, n_t, 1], n_b1 == 1 or n_used) picked by `ids` (I32 [n_used, n_t, 1, 1],
/// the expert of slot i of token t) -> F32 [m, n_used, n_t, 1] with
/// out[:, i, t] = as[:, :, ids[i, t]] x b[:, i % n_b1, t]. Each column has mul_mat's numerics
/// bit for bit (activations rounded to the weight type's dot type), except that float weights
/// always sum in llama.cpp's vector-dot order, as its mul_mat_id does. An id outside
/// [0, n_expert) fails the node at compute time (kOutOfRange, nothing written).
Tensor* mul_mat_id(Context& ctx, Tensor* as, Tensor* b, Tensor* ids);
Tensor* scale(Context& ctx, Tensor* a, float s);
Tensor* rms_norm(Context& ctx, Tensor* a, float eps);
/// `a` [head_dim, heads, tokens, 1] rotated by positions `pos` (I32 [tokens]).
/// `freq_factors` (F32, dense, [>= n_dims / 2], may be null) divide each pair's frequency, as
/// Llama 3.1's `rope_freqs.weight` does (see core::rope_angles).
Tensor* rope(Context& ctx, Tensor* a, Tensor* pos, const RopeParams& params,
             Tensor* freq_factors = nullptr);
/// softmax(a * scale + mask) along rows. `mask` (F32, may be null) is [>= ne0, >= ne1] and is
/// broadcast over dims 2 and 3.
Tensor* soft_max(Context& ctx, Tensor* a, Tensor* mask, float scale);
Tensor* silu(Context& ctx, Tensor* a);
/// GELU (tanh approximation) with llama.cpp's CPU numerics: x <= -10 gives 0, x >= 10 gives x,
/// otherwise f16(gelu_tanh(f32(f16(x)))) (see core::gelu_tanh), f16 rounding to nearest even.
/// F32, same shape; any strides.
Tensor* gelu(Context& ctx, Tensor* a);
/// tanhf(x) elementwise (the C library's). F32, same shape; any strides.
Tensor* tanh(Context& ctx, Tensor* a);
/// silu(gate) * up.
Tensor* swiglu(Context& ctx, Tensor* gate, Tensor* up);
/// Writes row r of `rows` ([n, k], F32) into row ids[r] of `dst` ([n, m], any computable type,
/// any strides), converting type. Returns a view of `dst` that depends on the write.
Tensor* set_rows(Context& ctx, Tensor* dst, Tensor* rows, Tensor* ids);
/// Index of the maximum of each row, I32 [rows].
Tensor* argmax(Context& ctx, Tensor* a);
/// F32 [n, r1, r2, r3] -> F32 [1, r1, r2, r3]: each row summed in double, in element order, and
/// rounded to f32 once (ggml_vec_sum_f32). Any strides.
Tensor* sum_rows(Context& ctx, Tensor* a);
/// F32 [n, r1, r2, r3] -> I32 [k, r1, r2, r3] (1 <= k <= n): the indices of the k largest
/// elements of each row, largest first. Ties: the lower index first; NaNs rank below every
/// number. (llama.cpp's ggml_top_k leaves the order of ties unspecified.) Any strides.
Tensor* top_k(Context& ctx, Tensor* a, int64_t k);

/// Fused attention, one (token, head) at a time without a [n_kv, n_tokens] score matrix:
/// out[:, h, t] = sum_j p_j v[:, j, h / g] with p = softmax_j(scale * q[:, t, h] . k[:, j, h / g]
/// + mask[j, t]) and g = n_head / n_head_kv (grouped-query attention).
///  - q: F32 [head_dim, n_tokens, n_head, 1], any strides (a permuted view of the projection);
///  - k, v: [head_dim, n_kv, n_head_kv, 1] in F32, F16, BF16 or Q8_0 with dense rows (views
///    of the KV cache); n_head % n_head_kv == 0;
///  - mask: F32 [>= n_kv, >= n_tokens, 1, 1] (0 visible, -inf hidden) or null. Cells whose mask
///    is -inf contribute nothing (a row that hides every cell gives zeros).
/// Returns F32 [head_dim, n_head, n_tokens, 1]: heads already merged per token.
/// Numerics: q is rounded to k's dot type as mul_mat rounds activations (so the scores are those
/// of mul_mat(k, q)); v rows are read as f32 and the probabilities are not rounded, unlike the
/// unfused mul_mat(v^T, soft_max(...)), which rounds them to v's dot type (f16 for an f16 cache).
/// `softcap` != 0 caps the logits as Gemma 2 does: each score becomes
/// softcap * tanhf(f32(q·k) * (scale / softcap)) (f32, the division done once, as ggml does)
/// before the mask is added.
Tensor* flash_attn(Context& ctx, Tensor* q, Tensor* k, Tensor* v, Tensor* mask, float scale,
                   float softcap = 0.0f);

}  // namespace strata::core
