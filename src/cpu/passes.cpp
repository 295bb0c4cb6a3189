#include "cpu/passes.h"

#include <cstdint>

#include "cpu/kernels/dispatch.h"

namespace strata::cpu {
namespace {

using core::Op;
using core::Tensor;

// Whether this op's kernel computes participant ith's rows split_range(dst.nrows()) of dst
// from the same rows of each source of dst's shape (and whole broadcast sources).
bool is_row_local(Op op) {
  switch (op) {
    case Op::kAdd:
    case Op::kMul:
    case Op::kDiv:
    case Op::kScale:
    case Op::kRmsNorm:
    case Op::kSilu:
    case Op::kSwiglu:
    case Op::kGelu:
    case Op::kTanh:
      return true;
    default:
      return false;
  }
}

bool overlap(const Tensor& a, const Tensor& b) {
  const auto* a0 = static_cast<const uint8_t*>(a.data);
  const auto* b0 = static_cast<const uint8_t*>(b.data);
  return a0 < b0 + b.nbytes() && b0 < a0 + a.nbytes();
}

// The same memory read as the same rows: row r of one is row r of the other.
bool same_rows(const Tensor& a, const Tensor& b) {
  return a.data == b.data && a.type == b.type && a.ne == b.ne && a.nb == b.nb;
}

// Where `write` may overlap `other` within a row-local pass: nowhere, or exactly, as rows of
// the node's own shape (each participant then touches only its own rows of both).
bool rows_apart_or_shared(const Tensor& write, const Tensor& other, const Tensor& node) {
  return !overlap(write, other) || (same_rows(write, other) && write.ne == node.ne);
}

// Whether `node` may run right after `members` (a row-local pass) with no barrier between.
bool joins_rows(std::span<const Tensor* const> members, const Tensor& node) {
  if (!is_row_local(node.op)) return false;
  for (const Tensor* m : members) {
    if (!is_row_local(m->op) || m->ne != node.ne) return false;
    // Reads of what a member wrote, writes over what a member read or wrote.
    for (const Tensor* s : node.src) {
      if (s != nullptr && !rows_apart_or_shared(*m, *s, node)) return false;
    }
    if (!rows_apart_or_shared(node, *m, node)) return false;
    for (const Tensor* s : m->src) {
      if (s != nullptr && !rows_apart_or_shared(node, *s, node)) return false;
    }
  }
  return true;
}

// Whether mul_mat `node` may run right after `members` (products of one converted input).
bool joins_products(std::span<const Tensor* const> members, const Tensor& node) {
  if (members.size() >= kMaxPassProducts) return false;
  if (!shares_converted_input(*members.front(), node)) return false;
  for (const Tensor* m : members) {
    if (overlap(*m, node)) return false;
    for (const Tensor* s : node.src) {
      if (s != nullptr && overlap(*m, *s)) return false;
    }
    for (const Tensor* s : m->src) {
      if (s != nullptr && overlap(node, *s)) return false;
    }
  }
  return true;
}

}  // namespace

std::vector<Pass> plan_passes(std::span<const Tensor* const> nodes) {
  std::vector<Pass> passes;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!passes.empty()) {
      Pass& p = passes.back();
      const auto members = nodes.subspan(p.begin, p.end - p.begin);
      const Tensor& node = *nodes[i];
      const bool joins =
          node.op == Op::kMulMat ? joins_products(members, node) : joins_rows(members, node);
      if (joins) {
        p.end = i + 1;
        continue;
      }
    }
    passes.push_back({i, i + 1});
  }
  return passes;
}

}  // namespace strata::cpu
