// What makes two graphs the same to the scheduler: the key of its plan cache.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/op.h"

namespace strata::sched {

/// Everything a plan depends on, for a graph built anew with fresh tensors: per node its op,
/// parameters, type, shape, strides, flags, name and which nodes or leafs it reads; per leaf
/// its shape and name, or, for a tensor that already has memory (a weight, the KV cache),
/// its identity and address. Two graphs with equal signatures get the same plan.
struct GraphSignature {
  std::string bytes;
  std::vector<core::OpParams> params;
  size_t hash = 0;

  friend bool operator==(const GraphSignature& a, const GraphSignature& b) {
    return a.hash == b.hash && a.bytes == b.bytes && a.params == b.params;
  }
};

/// Whether the scheduler itself placed `t` (its memory is in one of `compute_buffers`): such a
/// tensor counts as unplaced, so a graph allocated twice keeps its signature.
bool placed_by(const core::Tensor& t, std::span<const void* const> compute_buffers);

GraphSignature signature_of(const core::Graph& graph, std::span<const void* const> compute_buffers);

}  // namespace strata::sched
