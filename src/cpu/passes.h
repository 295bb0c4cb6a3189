// Which consecutive nodes of a graph the CPU runs without a barrier between them.
//
// compute_graph puts a barrier after each node so that the next one reads finished sources.
// Two kinds of neighbours need none, and decode pays a barrier's cost (the threads' hand-off,
// the wait for the slowest) for dozens of small nodes a token:
// - matrix products of one input converted once (Q, K and V; gate and up; see
//   shares_converted_input): each deals its own chunks, and a thread done with one takes
//   the next;
// - row-local nodes (norms, elementwise ops) over the same rows: participant ith computes the
//   same rows of each, so it reads only what it wrote itself.
// Either way, no node of a pass may write memory that another of the pass reads or writes,
// except a row-local node writing, in place, exactly the rows (of its own shape) that a member
// read or wrote: the same participant touches each of those rows in both.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "core/tensor.h"

namespace strata::cpu {

/// Nodes [begin, end) of a list run as one pass: one barrier after the last.
struct Pass {
  size_t begin = 0;
  size_t end = 0;
};

/// Matrix products in one pass at most: each has its own work shares (KernelArgs::shares).
inline constexpr size_t kMaxPassProducts = 4;

/// Splits `nodes` (computed nodes, in order) into passes.
std::vector<Pass> plan_passes(std::span<const core::Tensor* const> nodes);

}  // namespace strata::cpu
