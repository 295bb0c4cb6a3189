#include "memory/graph_allocator.h"

#include <unordered_map>
#include <vector>

#include "memory/free_list.h"

namespace strata::memory {
namespace {

using core::Tensor;

// The allocator owns a tensor's memory when nothing placed it beforehand and it is not a view.
bool needs_memory(const Tensor& t) {
  return t.data == nullptr && !t.is_view();
}

// Ops whose kernels read element i of src0 before writing element i of dst and nothing else
// of src0 afterwards, so dst may share src0's memory.
bool can_run_in_place(const Tensor& t) {
  switch (t.op) {
    case core::Op::kAdd:
    case core::Op::kMul:
    case core::Op::kDiv:
    case core::Op::kScale:
    case core::Op::kSilu:
    case core::Op::kSwiglu:
    case core::Op::kGelu:
    case core::Op::kTanh:
    case core::Op::kSoftMax:  // each row's elements are read before that row is written
      return true;
    case core::Op::kNone:
    case core::Op::kView:
    case core::Op::kReshape:
    case core::Op::kPermute:
    case core::Op::kTranspose:
    case core::Op::kCpy:
    case core::Op::kGetRows:
    case core::Op::kMulMat:
    case core::Op::kRmsNorm:
    case core::Op::kRope:
    case core::Op::kSetRows:
    case core::Op::kArgmax:
    case core::Op::kFlashAttn:
    case core::Op::kSumRows:
    case core::Op::kTopK:
    case core::Op::kMulMatId:
    case core::Op::kCount:
      return false;
  }
  return false;
}

struct Plan {
  std::unordered_map<const Tensor*, size_t> offsets;
  size_t peak = 0;
};

// Walks the graph in execution order, releasing each tensor after its last reader.
Plan make_plan(const core::Graph& graph, size_t alignment, const GraphAllocator::Owns& owns) {
  Plan plan;
  auto needs = [&owns](const Tensor& t) { return needs_memory(t) && (!owns || owns(t)); };
  FreeList free_list(alignment);
  // Readers still to run, per storage tensor (reads through views count for the storage).
  std::unordered_map<const Tensor*, int> readers;
  auto for_each_input = [](const Tensor* node, auto&& fn) {
    for (const Tensor* s : node->src) {
      if (s != nullptr) fn(core::storage_of(s));
    }
  };
  for (const Tensor* node : graph.nodes) {
    for_each_input(node, [&](const Tensor* s) { ++readers[s]; });
  }
  auto owned = [&](const Tensor* t) { return plan.offsets.count(t) != 0; };

  // Inputs are written by the caller before the run, so they hold memory from the start.
  for (const Tensor* leaf : graph.leafs) {
    if (needs(*leaf)) plan.offsets[leaf] = free_list.allocate(leaf->nbytes());
  }
  for (const Tensor* node : graph.nodes) {
    if (needs(*node)) {
      const Tensor* s0 = node->src[0];
      if (can_run_in_place(*node) && s0 != nullptr && !s0->is_view() && owned(s0) &&
          readers[s0] == 1 && !s0->has_flag(core::kFlagOutput) && s0->type == node->type &&
          s0->nbytes() == node->nbytes() && s0->is_contiguous() && node->is_contiguous()) {
        plan.offsets[node] = plan.offsets[s0];
        readers[s0] = 0;
        // node inherits s0's memory; s0 must not be released below.
        for (const Tensor* s : node->src) {
          if (s == nullptr || s == s0) continue;
          const Tensor* st = core::storage_of(s);
          if (--readers[st] == 0 && owned(st) && !st->has_flag(core::kFlagOutput) && st != s0) {
            free_list.release(plan.offsets[st], st->nbytes());
          }
        }
        continue;
      }
      plan.offsets[node] = free_list.allocate(node->nbytes());
    }
    for_each_input(node, [&](const Tensor* s) {
      if (--readers[s] == 0 && owned(s) && !s->has_flag(core::kFlagOutput)) {
        free_list.release(plan.offsets[s], s->nbytes());
      }
    });
  }
  plan.peak = free_list.peak();
  return plan;
}

}  // namespace

Status GraphAllocator::ensure_capacity(size_t bytes) {
  if (buffer_ && buffer_->size() >= bytes) return {};
  // The old buffer stays until the new one exists: a failed grow leaves the allocator as it
  // was, still able to place every graph that fitted before. On a budgeted device both are
  // briefly held, so when that fails, free the old one and try once more.
  auto buf = type_->allocate(bytes);
  if (!buf.ok() && buffer_) {
    auto old = std::move(buffer_);
    const size_t old_size = old->size();
    old.reset();
    buf = type_->allocate(bytes);
    if (!buf.ok()) {
      // Back to the old size (a new buffer: what was placed in the old one is stale).
      auto back = type_->allocate(old_size);
      if (back.ok()) buffer_ = std::move(back).value();
      ++generation_;
    }
  }
  if (!buf.ok()) return buf.status().with_context("compute buffer");
  buffer_ = std::move(buf).value();
  ++generation_;
  return {};
}

size_t GraphAllocator::required(const core::Graph& graph, const Owns& owns) const {
  return make_plan(graph, type_->alignment(), owns).peak;
}

Status GraphAllocator::reserve(const core::Graph& graph, const Owns& owns) {
  return ensure_capacity(make_plan(graph, type_->alignment(), owns).peak);
}

Status GraphAllocator::allocate(core::Graph& graph, const Owns& owns) {
  const Plan plan = make_plan(graph, type_->alignment(), owns);
  STRATA_RETURN_IF_ERROR(ensure_capacity(plan.peak));
  for (auto& [tensor, offset] : plan.offsets) {
    STRATA_RETURN_IF_ERROR(buffer_->place(*const_cast<Tensor*>(tensor), offset));
  }
  for (Tensor* node : graph.nodes) {
    if (node->is_view() && core::storage_of(node)->data != nullptr) {
      STRATA_RETURN_IF_ERROR(place_view(*node));
    }
  }
  return {};
}

}  // namespace strata::memory
