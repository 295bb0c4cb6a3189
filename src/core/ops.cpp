#include "core/ops.h"

#include <cmath>
#include <string>

namespace strata::core {
namespace {

// Records the failure and returns a harmless placeholder so building can go on.
Tensor* fail(Context& ctx, Op op, const std::string& why) {
  ctx.fail(error(ErrorCode::kInvalidArgument, std::string(op_name(op)) + ": " + why));
  return ctx.new_tensor(Type::kF32, {1, 1, 1, 1});
}

bool valid(const Tensor* t) {
  return t != nullptr;
}

Tensor* node(Context& ctx, Op op, Type type, Shape ne, Tensor* s0, Tensor* s1 = nullptr,
             Tensor* s2 = nullptr, Tensor* s3 = nullptr) {
  Tensor* t = ctx.new_tensor(type, ne);
  t->op = op;
  t->src = {s0, s1, s2, s3};
  return t;
}

Tensor* view_node(Context& ctx, Op op, Tensor* a, Shape ne, Strides nb, size_t offset) {
  Tensor* t = ctx.new_tensor(a->type, ne);
  t->op = op;
  t->nb = nb;
  t->src[0] = a;
  // Views of views collapse onto the tensor that owns the bytes.
  t->view_src = a->view_src != nullptr ? a->view_src : a;
  t->view_offset = (a->view_src != nullptr ? a->view_offset : 0) + offset;
  return t;
}

bool can_broadcast(const Tensor& a, const Tensor& b) {
  for (int i = 0; i < kMaxDims; ++i) {
    if (b.ne[i] == 0 || a.ne[i] % b.ne[i] != 0) return false;
  }
  return true;
}

Tensor* binary(Context& ctx, Op op, Tensor* a, Tensor* b) {
  if (!valid(a) || !valid(b)) return fail(ctx, op, "null argument");
  if (a->type != Type::kF32 || b->type != Type::kF32) {
    return fail(ctx, op, "expects f32 operands, got " + describe(*a) + " and " + describe(*b));
  }
  if (!can_broadcast(*a, *b)) {
    return fail(ctx, op, "cannot broadcast " + describe(*b) + " to " + describe(*a));
  }
  return node(ctx, op, Type::kF32, a->ne, a, b);
}

// The cache types flash_attn reads.
bool is_kv_type(Type t) {
  return t == Type::kF32 || t == Type::kF16 || t == Type::kBF16 || t == Type::kQ8_0;
}

Tensor* unary_f32(Context& ctx, Op op, Tensor* a) {
  if (!valid(a)) return fail(ctx, op, "null argument");
  if (a->type != Type::kF32) return fail(ctx, op, "expects f32, got " + describe(*a));
  return node(ctx, op, Type::kF32, a->ne, a);
}

}  // namespace

Tensor* view(Context& ctx, Tensor* a, Shape ne, Strides nb, size_t offset) {
  if (!valid(a)) return fail(ctx, Op::kView, "null argument");
  Tensor probe;
  probe.type = a->type;
  probe.ne = ne;
  probe.nb = nb;
  if (ne[0] % block_size(a->type) != 0) {
    return fail(ctx, Op::kView, "row length not a multiple of the block size");
  }
  if (is_quantized(a->type) && nb[0] != type_size(a->type)) {
    return fail(ctx, Op::kView, "blocks of a quantized row must be dense");
  }
  const size_t end = offset + probe.nbytes();
  if (end > a->nbytes()) {
    return fail(ctx, Op::kView,
                "view of " + std::to_string(end) + " bytes exceeds " + describe(*a) + " (" +
                    std::to_string(a->nbytes()) + " bytes)");
  }
  return view_node(ctx, Op::kView, a, ne, nb, offset);
}

Tensor* reshape(Context& ctx, Tensor* a, Shape ne) {
  if (!valid(a)) return fail(ctx, Op::kReshape, "null argument");
  if (!a->is_contiguous()) return fail(ctx, Op::kReshape, "source is not contiguous");
  if (ne[0] * ne[1] * ne[2] * ne[3] != a->nelements() || ne[0] % block_size(a->type) != 0) {
    return fail(ctx, Op::kReshape, "element count mismatch reshaping " + describe(*a));
  }
  return view_node(ctx, Op::kReshape, a, ne, contiguous_strides(a->type, ne), 0);
}

Tensor* permute(Context& ctx, Tensor* a, std::array<int, kMaxDims> axes) {
  if (!valid(a)) return fail(ctx, Op::kPermute, "null argument");
  bool seen[kMaxDims] = {};
  for (int ax : axes) {
    if (ax < 0 || ax >= kMaxDims || seen[ax])
      return fail(ctx, Op::kPermute, "axes are not a permutation");
    seen[ax] = true;
  }
  if (is_quantized(a->type) && axes[0] != 0) {
    return fail(ctx, Op::kPermute, "cannot move the row axis of a quantized tensor");
  }
  Shape ne{};
  Strides nb{};
  for (int i = 0; i < kMaxDims; ++i) {
    ne[axes[i]] = a->ne[i];
    nb[axes[i]] = a->nb[i];
  }
  Tensor* t = view_node(ctx, Op::kPermute, a, ne, nb, 0);
  PermuteParams p;
  for (int i = 0; i < kMaxDims; ++i) p.axes[i] = axes[i];
  t->params = p;
  return t;
}

Tensor* transpose(Context& ctx, Tensor* a) {
  if (!valid(a)) return fail(ctx, Op::kTranspose, "null argument");
  if (is_quantized(a->type))
    return fail(ctx, Op::kTranspose, "cannot transpose a quantized tensor");
  Shape ne = a->ne;
  Strides nb = a->nb;
  std::swap(ne[0], ne[1]);
  std::swap(nb[0], nb[1]);
  return view_node(ctx, Op::kTranspose, a, ne, nb, 0);
}

Tensor* cast(Context& ctx, Tensor* a, Type type) {
  if (!valid(a)) return fail(ctx, Op::kCpy, "null argument");
  if (!is_computable(a->type) || !is_computable(type)) {
    return fail(ctx, Op::kCpy,
                "cannot convert " + describe(*a) + " to " + std::string(type_name(type)));
  }
  if (a->ne[0] % block_size(type) != 0) {
    return fail(ctx, Op::kCpy,
                "row length not a multiple of the block size of " + std::string(type_name(type)));
  }
  if (is_quantized(a->type) && !a->has_contiguous_rows()) {
    return fail(ctx, Op::kCpy, "quantized source rows must be contiguous");
  }
  return node(ctx, Op::kCpy, type, a->ne, a);
}

Tensor* cont(Context& ctx, Tensor* a) {
  return cast(ctx, a, valid(a) ? a->type : Type::kF32);
}

Tensor* get_rows(Context& ctx, Tensor* table, Tensor* ids) {
  if (!valid(table) || !valid(ids)) return fail(ctx, Op::kGetRows, "null argument");
  if (!is_computable(table->type))
    return fail(ctx, Op::kGetRows, "unsupported table type " + describe(*table));
  if (ids->type != Type::kI32)
    return fail(ctx, Op::kGetRows, "ids must be i32, got " + describe(*ids));
  if (ids->ne[1] != table->ne[2] || ids->ne[2] != table->ne[3] || ids->ne[3] != 1) {
    return fail(ctx, Op::kGetRows,
                "ids " + describe(*ids) + " do not match table " + describe(*table));
  }
  return node(ctx, Op::kGetRows, Type::kF32, {table->ne[0], ids->ne[0], table->ne[2], table->ne[3]},
              table, ids);
}

Tensor* mul_mat(Context& ctx, Tensor* a, Tensor* b, Tensor* mask) {
  if (!valid(a) || !valid(b)) return fail(ctx, Op::kMulMat, "null argument");
  const int64_t group = interleaved_rows(a->type);
  if ((!is_computable(a->type) && group == 1) || a->type == Type::kI32) {
    return fail(ctx, Op::kMulMat, "unsupported weight type " + describe(*a));
  }
  if (group > 1 && (a->ne[1] % group != 0 || !a->is_contiguous())) {
    return fail(ctx, Op::kMulMat,
                "interleaved weights must be dense whole groups of " + std::to_string(group) +
                    " rows: " + describe(*a));
  }
  if (b->type != Type::kF32)
    return fail(ctx, Op::kMulMat, "activations must be f32, got " + describe(*b));
  if (a->ne[0] != b->ne[0]) {
    return fail(ctx, Op::kMulMat,
                "inner dimensions differ: " + describe(*a) + " x " + describe(*b));
  }
  if (b->ne[2] % a->ne[2] != 0 || b->ne[3] % a->ne[3] != 0) {
    return fail(ctx, Op::kMulMat, "cannot broadcast " + describe(*a) + " over " + describe(*b));
  }
  if (is_quantized(a->type) && !a->has_contiguous_rows()) {
    return fail(ctx, Op::kMulMat, "quantized weight rows must be contiguous");
  }
  if (mask != nullptr &&
      (mask->type != Type::kF32 || mask->ne[0] < a->ne[1] || mask->ne[1] < b->ne[1] ||
       mask->ne[2] != 1 || mask->ne[3] != 1 || mask->nb[0] != sizeof(float))) {
    return fail(ctx, Op::kMulMat,
                "mask " + describe(*mask) + " is not dense f32 [>= " + std::to_string(a->ne[1]) +
                    ", >= " + std::to_string(b->ne[1]) + ", 1, 1]");
  }
  return node(ctx, Op::kMulMat, Type::kF32, {a->ne[1], b->ne[1], b->ne[2], b->ne[3]}, a, b, mask);
}

Tensor* add(Context& ctx, Tensor* a, Tensor* b) {
  return binary(ctx, Op::kAdd, a, b);
}
Tensor* mul(Context& ctx, Tensor* a, Tensor* b) {
  return binary(ctx, Op::kMul, a, b);
}
Tensor* div(Context& ctx, Tensor* a, Tensor* b) {
  return binary(ctx, Op::kDiv, a, b);
}

Tensor* mul_mat_id(Context& ctx, Tensor* as, Tensor* b, Tensor* ids) {
  constexpr Op kOp = Op::kMulMatId;
  if (!valid(as) || !valid(b) || !valid(ids)) return fail(ctx, kOp, "null argument");
  if (!is_computable(as->type) || as->type == Type::kI32) {
    return fail(ctx, kOp, "unsupported weight type " + describe(*as));
  }
  if (as->nb[0] != type_size(as->type) || as->ne[3] != 1) {
    return fail(ctx, kOp,
                "experts must be [k, m, n_expert, 1] with dense rows, got " + describe(*as));
  }
  if (b->type != Type::kF32 || ids->type != Type::kI32) {
    return fail(
        ctx, kOp,
        "expects f32 activations and i32 ids, got " + describe(*b) + " and " + describe(*ids));
  }
  if (ids->ne[2] != 1 || ids->ne[3] != 1 || b->ne[0] != as->ne[0] || b->ne[2] != ids->ne[1] ||
      b->ne[3] != 1 || (b->ne[1] != 1 && b->ne[1] != ids->ne[0])) {
    return fail(ctx, kOp,
                "activations " + describe(*b) + " and ids " + describe(*ids) +
                    " do not match experts " + describe(*as));
  }
  return node(ctx, kOp, Type::kF32, {as->ne[1], ids->ne[0], ids->ne[1], 1}, as, b, ids);
}

Tensor* scale(Context& ctx, Tensor* a, float s) {
  Tensor* t = unary_f32(ctx, Op::kScale, a);
  t->params = ScaleParams{s};
  return t;
}

Tensor* rms_norm(Context& ctx, Tensor* a, float eps) {
  Tensor* t = unary_f32(ctx, Op::kRmsNorm, a);
  t->params = RmsNormParams{eps};
  return t;
}

Tensor* rope(Context& ctx, Tensor* a, Tensor* pos, const RopeParams& params, Tensor* freq_factors) {
  if (!valid(a) || !valid(pos)) return fail(ctx, Op::kRope, "null argument");
  if (a->type != Type::kF32) return fail(ctx, Op::kRope, "expects f32, got " + describe(*a));
  if (pos->type != Type::kI32 || pos->ne[0] != a->ne[2] || pos->nrows() != 1) {
    return fail(ctx, Op::kRope, "positions " + describe(*pos) + " do not match " + describe(*a));
  }
  if (params.n_dims <= 0 || params.n_dims > a->ne[0] || params.n_dims % 2 != 0) {
    return fail(ctx, Op::kRope,
                "rotated dims " + std::to_string(params.n_dims) +
                    " must be even and at most the head size");
  }
  if (freq_factors != nullptr &&
      (freq_factors->type != Type::kF32 || !freq_factors->is_contiguous() ||
       freq_factors->nrows() != 1 || freq_factors->ne[0] < params.n_dims / 2)) {
    return fail(ctx, Op::kRope,
                "frequency factors " + describe(*freq_factors) +
                    " must be dense f32 [>= " + std::to_string(params.n_dims / 2) + "]");
  }
  Tensor* t = node(ctx, Op::kRope, Type::kF32, a->ne, a, pos, freq_factors);
  t->params = params;
  return t;
}

Tensor* soft_max(Context& ctx, Tensor* a, Tensor* mask, float s) {
  if (!valid(a)) return fail(ctx, Op::kSoftMax, "null argument");
  if (a->type != Type::kF32) return fail(ctx, Op::kSoftMax, "expects f32, got " + describe(*a));
  if (mask != nullptr &&
      (mask->type != Type::kF32 || mask->ne[0] < a->ne[0] || mask->ne[1] < a->ne[1])) {
    return fail(ctx, Op::kSoftMax, "mask " + describe(*mask) + " does not cover " + describe(*a));
  }
  Tensor* t = node(ctx, Op::kSoftMax, Type::kF32, a->ne, a, mask);
  t->params = SoftMaxParams{s};
  return t;
}

Tensor* silu(Context& ctx, Tensor* a) {
  return unary_f32(ctx, Op::kSilu, a);
}

Tensor* gelu(Context& ctx, Tensor* a) {
  return unary_f32(ctx, Op::kGelu, a);
}

Tensor* tanh(Context& ctx, Tensor* a) {
  return unary_f32(ctx, Op::kTanh, a);
}

Tensor* swiglu(Context& ctx, Tensor* gate, Tensor* up) {
  if (!valid(gate) || !valid(up)) return fail(ctx, Op::kSwiglu, "null argument");
  if (gate->type != Type::kF32 || up->type != Type::kF32 || gate->ne != up->ne) {
    return fail(ctx, Op::kSwiglu, "operands differ: " + describe(*gate) + " and " + describe(*up));
  }
  return node(ctx, Op::kSwiglu, Type::kF32, gate->ne, gate, up);
}

Tensor* set_rows(Context& ctx, Tensor* dst, Tensor* rows, Tensor* ids) {
  if (!valid(dst) || !valid(rows) || !valid(ids)) return fail(ctx, Op::kSetRows, "null argument");
  if (!is_computable(dst->type))
    return fail(ctx, Op::kSetRows, "unsupported destination " + describe(*dst));
  if (rows->type != Type::kF32 || rows->ne[0] != dst->ne[0] || rows->ne[2] != 1 ||
      rows->ne[3] != 1 || dst->ne[2] != 1 || dst->ne[3] != 1) {
    return fail(ctx, Op::kSetRows, "rows " + describe(*rows) + " do not fit " + describe(*dst));
  }
  if (ids->type != Type::kI32 || ids->ne[0] != rows->ne[1] || ids->nrows() != 1) {
    return fail(ctx, Op::kSetRows,
                "ids " + describe(*ids) + " do not match rows " + describe(*rows));
  }
  if (is_quantized(dst->type) && !dst->has_contiguous_rows()) {
    return fail(ctx, Op::kSetRows, "quantized destination rows must be contiguous");
  }
  Tensor* t = view_node(ctx, Op::kSetRows, dst, dst->ne, dst->nb, 0);
  t->src = {dst, rows, ids};
  return t;
}

Tensor* argmax(Context& ctx, Tensor* a) {
  if (!valid(a)) return fail(ctx, Op::kArgmax, "null argument");
  if (a->type != Type::kF32) return fail(ctx, Op::kArgmax, "expects f32, got " + describe(*a));
  return node(ctx, Op::kArgmax, Type::kI32, {a->nrows(), 1, 1, 1}, a);
}

Tensor* sum_rows(Context& ctx, Tensor* a) {
  if (!valid(a)) return fail(ctx, Op::kSumRows, "null argument");
  if (a->type != Type::kF32) return fail(ctx, Op::kSumRows, "expects f32, got " + describe(*a));
  return node(ctx, Op::kSumRows, Type::kF32, {1, a->ne[1], a->ne[2], a->ne[3]}, a);
}

Tensor* top_k(Context& ctx, Tensor* a, int64_t k) {
  if (!valid(a)) return fail(ctx, Op::kTopK, "null argument");
  if (a->type != Type::kF32) return fail(ctx, Op::kTopK, "expects f32, got " + describe(*a));
  if (k < 1 || k > a->ne[0] || a->ne[0] > INT32_MAX) {
    return fail(ctx, Op::kTopK,
                "k = " + std::to_string(k) + " outside [1, " + std::to_string(a->ne[0]) + "] for " +
                    describe(*a));
  }
  return node(ctx, Op::kTopK, Type::kI32, {k, a->ne[1], a->ne[2], a->ne[3]}, a);
}

Tensor* flash_attn(Context& ctx, Tensor* q, Tensor* k, Tensor* v, Tensor* mask, float scale,
                   float softcap) {
  constexpr Op kOp = Op::kFlashAttn;
  if (!valid(q) || !valid(k) || !valid(v)) return fail(ctx, kOp, "null argument");
  if (q->type != Type::kF32 || q->ne[3] != 1) {
    return fail(ctx, kOp, "q must be f32 [head_dim, n_tokens, n_head, 1], got " + describe(*q));
  }
  for (const Tensor* kv : {k, v}) {
    if (!is_kv_type(kv->type)) {
      return fail(ctx, kOp, "k and v must be f32, f16, bf16 or q8_0, got " + describe(*kv));
    }
    if (!kv->has_contiguous_rows()) return fail(ctx, kOp, "k and v rows must be dense");
  }
  if (k->ne != v->ne || k->ne[0] != q->ne[0] || k->ne[3] != 1) {
    return fail(ctx, kOp,
                "k " + describe(*k) + " and v " + describe(*v) + " do not match q " + describe(*q));
  }
  if (k->ne[1] < 1 || k->ne[2] < 1 || q->ne[2] % k->ne[2] != 0) {
    return fail(ctx, kOp,
                std::to_string(q->ne[2]) + " query heads cannot share " + std::to_string(k->ne[2]) +
                    " kv heads");
  }
  if (mask != nullptr && (mask->type != Type::kF32 || mask->ne[0] < k->ne[1] ||
                          mask->ne[1] < q->ne[1] || mask->ne[2] != 1 || mask->ne[3] != 1)) {
    return fail(ctx, kOp,
                "mask " + describe(*mask) + " does not cover " + std::to_string(k->ne[1]) +
                    " cells x " + std::to_string(q->ne[1]) + " tokens");
  }
  if (!std::isfinite(softcap) || softcap < 0.0f) {
    return fail(ctx, kOp, "softcap must be finite and >= 0, got " + std::to_string(softcap));
  }
  Tensor* t = node(ctx, kOp, Type::kF32, {q->ne[0], q->ne[2], q->ne[1], 1}, q, k, v, mask);
  t->params = FlashAttnParams{scale, softcap};
  return t;
}

}  // namespace strata::core
