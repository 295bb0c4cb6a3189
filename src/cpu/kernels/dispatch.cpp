#include <string>

#include "cpu/kernels/dot.h"
#include "cpu/kernels/kernels.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

using core::Op;
using core::Tensor;
using core::Type;

// Collects the first failed requirement of a node.
class Checker {
 public:
  explicit Checker(const Tensor& node) : node_(node) {}

  Checker& need(bool ok, const char* what) {
    if (!ok && status_.ok()) {
      status_ = error(ErrorCode::kUnsupported, "cpu: " + std::string(core::op_name(node_.op)) +
                                                   " " + core::describe(node_) + ": " + what);
    }
    return *this;
  }
  Checker& sources(int n) {
    for (int i = 0; i < n; ++i) need(node_.src[i] != nullptr, "missing source");
    return *this;
  }
  const Tensor& src(int i) const { return *node_.src[i]; }
  Status status() const { return status_; }
  bool ok() const { return status_.ok(); }

 private:
  const Tensor& node_;
  Status status_;
};

bool is_f32(const Tensor& t) {
  return t.type == Type::kF32;
}
bool dense_rows(const Tensor& t) {
  return t.nb[0] == core::type_size(t.type);
}
// Block types are only ever read and written a whole dense row at a time.
bool rows_ok(const Tensor& t) {
  return !core::is_quantized(t.type) || dense_rows(t);
}
bool divides(const Tensor& small, const Tensor& big, int from_dim) {
  for (int i = from_dim; i < core::kMaxDims; ++i) {
    if (small.ne[i] <= 0 || big.ne[i] % small.ne[i] != 0) return false;
  }
  return true;
}

Status check_unary(Checker& c, const Tensor& node) {
  c.sources(1);
  if (!c.ok()) return c.status();
  return c.need(is_f32(c.src(0)) && is_f32(node), "expects f32")
      .need(c.src(0).ne == node.ne, "shape differs from the source")
      .status();
}

// The layouts flash_attn.cpp reads: see core::flash_attn.
Status check_flash_attn(Checker& c, const Tensor& node) {
  if (!c.sources(3).ok()) return c.status();
  const Tensor& q = c.src(0);
  const Tensor& k = c.src(1);
  const Tensor& v = c.src(2);
  const Tensor* mask = node.src[3];
  const auto kv_ok = [](const Tensor& t) {
    return (t.type == Type::kF32 || t.type == Type::kF16 || t.type == Type::kBF16 ||
            t.type == Type::kQ8_0) &&
           dense_rows(t);
  };
  return c.need(std::holds_alternative<core::FlashAttnParams>(node.params), "bad params")
      .need(is_f32(q) && q.ne[3] == 1, "q must be f32 [head_dim, n_tokens, n_head, 1]")
      .need(kv_ok(k) && kv_ok(v), "k and v must be f32, f16, bf16 or q8_0 with dense rows")
      .need(k.ne == v.ne && k.ne[0] == q.ne[0] && k.ne[3] == 1 && k.ne[2] > 0 &&
                q.ne[2] % k.ne[2] == 0,
            "k and v do not match q")
      .need(is_f32(node) && node.is_contiguous() && node.ne[0] == q.ne[0] &&
                node.ne[1] == q.ne[2] && node.ne[2] == q.ne[1] && node.ne[3] == 1,
            "output must be dense f32 [head_dim, n_head, n_tokens, 1]")
      .need(mask == nullptr || (is_f32(*mask) && mask->ne[0] >= k.ne[1] && mask->ne[1] >= q.ne[1] &&
                                mask->ne[2] == 1 && mask->ne[3] == 1),
            "mask must be f32 covering [n_kv, n_tokens]")
      .status();
}

// The layouts mul_mat_id.cpp reads: see core::mul_mat_id.
Status check_mul_mat_id(Checker& c, const Tensor& node) {
  if (!c.sources(3).ok()) return c.status();
  const Tensor& w = c.src(0);
  const Tensor& x = c.src(1);
  const Tensor& ids = c.src(2);
  return c
      .need(dot_kernels(w.type) != nullptr && core::interleaved_rows(w.type) == 1,
            "weight type not supported")
      .need(dense_rows(w) && w.ne[3] == 1, "experts must be [k, m, n_expert, 1] with dense rows")
      .need(is_f32(x) && x.ne[0] == w.ne[0] && x.ne[3] == 1, "activations must be f32 [k, n, n_t]")
      .need(ids.type == Type::kI32 && ids.ne[2] == 1 && ids.ne[3] == 1 && x.ne[2] == ids.ne[1] &&
                (x.ne[1] == 1 || x.ne[1] == ids.ne[0]),
            "ids must be i32 [n_used, n_t] matching the activations")
      .need(is_f32(node) && dense_rows(node) && node.ne[0] == w.ne[1] && node.ne[1] == ids.ne[0] &&
                node.ne[2] == ids.ne[1] && node.ne[3] == 1,
            "output must be f32 [m, n_used, n_t, 1] with dense rows")
      .status();
}

}  // namespace

Status check_node(const Tensor& node) {
  Checker c(node);
  switch (node.op) {
    case Op::kNone:
    case Op::kView:
    case Op::kReshape:
    case Op::kPermute:
    case Op::kTranspose:
      return {};
    case Op::kCpy:
      if (!c.sources(1).ok()) return c.status();
      return c
          .need(core::is_computable(c.src(0).type) && core::is_computable(node.type),
                "type not computable")
          .need(c.src(0).ne == node.ne, "shape differs from the source")
          .need(rows_ok(c.src(0)) && rows_ok(node), "quantized rows must be dense")
          .status();
    case Op::kGetRows:
      if (!c.sources(2).ok()) return c.status();
      return c.need(core::is_computable(c.src(0).type), "table type not computable")
          .need(rows_ok(c.src(0)), "quantized rows must be dense")
          .need(c.src(1).type == Type::kI32, "ids must be i32")
          .need(is_f32(node) && dense_rows(node), "output must be f32 with dense rows")
          .need(node.ne[0] == c.src(0).ne[0] && node.ne[1] == c.src(1).ne[0] &&
                    node.ne[2] == c.src(0).ne[2] && node.ne[3] == c.src(0).ne[3] &&
                    c.src(1).ne[1] == node.ne[2] && c.src(1).ne[2] == node.ne[3],
                "shapes do not match")
          .status();
    case Op::kMulMat:
      if (!c.sources(2).ok()) return c.status();
      return c.need(dot_kernels(c.src(0).type) != nullptr, "weight type not supported")
          .need(rows_ok(c.src(0)), "quantized rows must be dense")
          .need(is_f32(c.src(1)) && is_f32(node) && dense_rows(node),
                "expects f32 activations and output")
          .need(c.src(0).ne[0] == c.src(1).ne[0], "inner dimensions differ")
          .need(divides(c.src(0), c.src(1), 2), "weights do not broadcast")
          .need(node.ne[0] == c.src(0).ne[1] && node.ne[1] == c.src(1).ne[1] &&
                    node.ne[2] == c.src(1).ne[2] && node.ne[3] == c.src(1).ne[3],
                "output shape does not match")
          .need(node.src[2] == nullptr ||
                    (is_f32(*node.src[2]) && node.src[2]->nb[0] == sizeof(float) &&
                     node.src[2]->ne[0] >= node.ne[0] && node.src[2]->ne[1] >= node.ne[1] &&
                     node.src[2]->ne[2] == 1 && node.src[2]->ne[3] == 1),
                "mask must be dense f32 covering [m, n]")
          .status();
    case Op::kAdd:
    case Op::kMul:
    case Op::kDiv:
    case Op::kSwiglu:
      if (!c.sources(2).ok()) return c.status();
      return c.need(is_f32(c.src(0)) && is_f32(c.src(1)) && is_f32(node), "expects f32")
          .need(c.src(0).ne == node.ne && divides(c.src(1), node, 0), "shapes do not broadcast")
          .need(node.op != Op::kSwiglu || c.src(1).ne == node.ne, "operands differ")
          .status();
    case Op::kScale:
      return check_unary(c, node).ok()
                 ? c.need(std::holds_alternative<core::ScaleParams>(node.params), "bad params")
                       .status()
                 : c.status();
    case Op::kRmsNorm:
      return check_unary(c, node).ok()
                 ? c.need(std::holds_alternative<core::RmsNormParams>(node.params), "bad params")
                       .status()
                 : c.status();
    case Op::kSilu:
    case Op::kGelu:
    case Op::kTanh:
      return check_unary(c, node);
    case Op::kRope: {
      if (!check_unary(c, node).ok() || !c.sources(2).ok()) return c.status();
      const auto* rp = std::get_if<core::RopeParams>(&node.params);
      return c
          .need(rp != nullptr && rp->n_dims > 0 && rp->n_dims % 2 == 0 && rp->n_dims <= node.ne[0],
                "bad params")
          .need(c.src(1).type == Type::kI32 && c.src(1).ne[0] >= node.ne[2],
                "positions must be i32 [ne2]")
          .need(node.src[2] == nullptr || (is_f32(*node.src[2]) && node.src[2]->is_contiguous() &&
                                           rp != nullptr && node.src[2]->ne[0] >= rp->n_dims / 2),
                "frequency factors must be dense f32 [>= n_dims / 2]")
          .status();
    }
    case Op::kSoftMax: {
      if (!check_unary(c, node).ok()) return c.status();
      const Tensor* mask = node.src[1];
      return c.need(std::holds_alternative<core::SoftMaxParams>(node.params), "bad params")
          .need(dense_rows(node), "output rows must be dense")
          .need(mask == nullptr ||
                    (is_f32(*mask) && mask->ne[0] >= node.ne[0] && mask->ne[1] >= node.ne[1]),
                "mask must be f32 covering [ne0, ne1]")
          .status();
    }
    case Op::kSetRows:
      if (!c.sources(3).ok()) return c.status();
      return c.need(core::is_computable(node.type), "destination type not computable")
          .need(rows_ok(node), "quantized rows must be dense")
          .need(node.ne[2] == 1 && node.ne[3] == 1, "destination must be 2-d")
          .need(is_f32(c.src(1)) && c.src(1).ne[0] == node.ne[0] &&
                    c.src(1).nrows() == c.src(1).ne[1],
                "rows must be f32 [ne0, k]")
          .need(c.src(2).type == Type::kI32 && c.src(2).ne[0] == c.src(1).ne[1],
                "ids must be i32 [k]")
          .status();
    case Op::kArgmax:
      if (!c.sources(1).ok()) return c.status();
      return c.need(is_f32(c.src(0)) && node.type == Type::kI32, "expects f32 in, i32 out")
          .need(node.ne[0] == c.src(0).nrows(), "output must hold one index per row")
          .status();
    case Op::kFlashAttn:
      return check_flash_attn(c, node);
    case Op::kSumRows:
      if (!c.sources(1).ok()) return c.status();
      return c.need(is_f32(c.src(0)) && is_f32(node), "expects f32")
          .need(node.ne[0] == 1 && node.ne[1] == c.src(0).ne[1] && node.ne[2] == c.src(0).ne[2] &&
                    node.ne[3] == c.src(0).ne[3],
                "output must be [1, ne1, ne2, ne3]")
          .status();
    case Op::kTopK:
      if (!c.sources(1).ok()) return c.status();
      return c.need(is_f32(c.src(0)) && node.type == Type::kI32, "expects f32 in, i32 out")
          .need(node.ne[0] >= 1 && node.ne[0] <= c.src(0).ne[0] && node.ne[1] == c.src(0).ne[1] &&
                    node.ne[2] == c.src(0).ne[2] && node.ne[3] == c.src(0).ne[3],
                "output must be [k <= ne0, ne1, ne2, ne3]")
          .status();
    case Op::kMulMatId:
      return check_mul_mat_id(c, node);
    case Op::kCount:
      return c.need(false, "not an op").status();
  }
  return c.need(false, "unknown op").status();
}

size_t work_size(const Tensor& node, int n_threads) {
  switch (node.op) {
    case Op::kMulMat:
      return mul_mat_work_size(node, n_threads);
    case Op::kRope:
      return rope_work_size(node, n_threads);
    case Op::kCpy:
      return cpy_work_size(node, n_threads);
    case Op::kSetRows:
      return set_rows_work_size(node, n_threads);
    case Op::kFlashAttn:
      return flash_attn_work_size(node, n_threads);
    case Op::kTopK:
      return top_k_work_size(node, n_threads);
    case Op::kMulMatId:
      return mul_mat_id_work_size(node, n_threads);
    case Op::kNone:
    case Op::kView:
    case Op::kReshape:
    case Op::kPermute:
    case Op::kTranspose:
    case Op::kGetRows:
    case Op::kAdd:
    case Op::kMul:
    case Op::kScale:
    case Op::kRmsNorm:
    case Op::kSoftMax:
    case Op::kSilu:
    case Op::kSwiglu:
    case Op::kArgmax:
    case Op::kGelu:
    case Op::kTanh:
    case Op::kSumRows:
    case Op::kDiv:
    case Op::kCount:
      return 0;
  }
  return 0;
}

Status compute_node(const Tensor& node, const KernelArgs& args) {
  STRATA_RETURN_IF_ERROR(check_node(node));
  switch (node.op) {
    case Op::kNone:
    case Op::kView:
    case Op::kReshape:
    case Op::kPermute:
    case Op::kTranspose:
    case Op::kCount:  // rejected by check_node
      return {};
    case Op::kCpy:
      cpy(node, args);
      return {};
    case Op::kGetRows:
      return get_rows(node, args);
    case Op::kMulMat:
      mul_mat(node, args);
      return {};
    case Op::kAdd:
      add(node, args);
      return {};
    case Op::kMul:
      mul(node, args);
      return {};
    case Op::kScale:
      scale(node, args);
      return {};
    case Op::kRmsNorm:
      rms_norm(node, args);
      return {};
    case Op::kRope:
      rope(node, args);
      return {};
    case Op::kSoftMax:
      soft_max(node, args);
      return {};
    case Op::kSilu:
      silu(node, args);
      return {};
    case Op::kSwiglu:
      swiglu(node, args);
      return {};
    case Op::kSetRows:
      return set_rows(node, args);
    case Op::kArgmax:
      argmax(node, args);
      return {};
    case Op::kFlashAttn:
      flash_attn(node, args);
      return {};
    case Op::kGelu:
      gelu(node, args);
      return {};
    case Op::kTanh:
      tanh(node, args);
      return {};
    case Op::kSumRows:
      sum_rows(node, args);
      return {};
    case Op::kDiv:
      div(node, args);
      return {};
    case Op::kTopK:
      top_k(node, args);
      return {};
    case Op::kMulMatId:
      return mul_mat_id(node, args);
  }
  return error(ErrorCode::kInternal, "cpu: unknown op");
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
