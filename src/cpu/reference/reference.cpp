#include "cpu/reference/reference.h"

#include <string>

#include "cpu/reference/ops.h"

namespace strata::cpu::reference {
namespace {

using core::Op;
using core::Tensor;

Status unsupported(const Tensor& node, const std::string& why) {
  return error(ErrorCode::kUnsupported, "reference: " + std::string(core::op_name(node.op)) + " " +
                                            core::describe(node) + ": " + why);
}

// What the element accessors need: placed tensors, conversions for their types, and whole
// dense rows for block types.
Status check_tensor(const Tensor& node, const Tensor& t) {
  if (t.data == nullptr)
    return error(ErrorCode::kInternal, "reference: tensor '" + t.name + "' is not placed");
  if (!core::is_computable(t.type))
    return unsupported(node, "type " + std::string(core::type_name(t.type)));
  if (core::is_quantized(t.type) && t.nb[0] != core::type_size(t.type)) {
    return unsupported(node, "quantized rows must be dense");
  }
  return {};
}

}  // namespace

Status compute_node(const Tensor& node) {
  if (node.op == Op::kNone || core::is_view_op(node.op)) return {};
  STRATA_RETURN_IF_ERROR(check_tensor(node, node));
  for (const Tensor* s : node.src) {
    if (s != nullptr) STRATA_RETURN_IF_ERROR(check_tensor(node, *s));
  }
  switch (node.op) {
    case Op::kNone:
    case Op::kView:
    case Op::kReshape:
    case Op::kPermute:
    case Op::kTranspose:
      return {};
    case Op::kCpy:
      cpy(node);
      return {};
    case Op::kGetRows:
      return get_rows(node);
    case Op::kMulMat:
      mul_mat(node);
      return {};
    case Op::kAdd:
      add(node);
      return {};
    case Op::kMul:
      mul(node);
      return {};
    case Op::kScale:
      scale(node);
      return {};
    case Op::kRmsNorm:
      rms_norm(node);
      return {};
    case Op::kRope:
      rope(node);
      return {};
    case Op::kSoftMax:
      soft_max(node);
      return {};
    case Op::kSilu:
      silu(node);
      return {};
    case Op::kSwiglu:
      swiglu(node);
      return {};
    case Op::kSetRows:
      return set_rows(node);
    case Op::kArgmax:
      argmax(node);
      return {};
    case Op::kFlashAttn:
      flash_attn(node);
      return {};
    case Op::kGelu:
      gelu(node);
      return {};
    case Op::kTanh:
      tanh(node);
      return {};
    case Op::kSumRows:
      sum_rows(node);
      return {};
    case Op::kDiv:
      div(node);
      return {};
    case Op::kTopK:
      top_k(node);
      return {};
    case Op::kMulMatId:
      return mul_mat_id(node);
    case Op::kCount:
      return unsupported(node, "not an op");
  }
  return unsupported(node, "unknown op");
}

Status compute_graph(const core::Graph& g) {
  for (const Tensor* node : g.nodes) {
    STRATA_RETURN_IF_ERROR(compute_node(*node).with_context("node '" + node->name + "'"));
  }
  return {};
}

}  // namespace strata::cpu::reference
