// A planned graph: the scheduler's own copy of a caller's graph, assigned and split.
// Internal to sched.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "core/context.h"
#include "core/graph.h"
#include "sched/graph_signature.h"
#include "sched/scheduler.h"

namespace strata::sched {

/// Planning never touches the caller's graph: it clones every node and every unplaced leaf
/// (tensors the caller placed, such as weights and the KV cache, are shared), then assigns
/// and splits the clones and re-points their sources at input copies. The clones keep the
/// caller's names, so node identity (boundary schedules, eval callbacks) survives.
struct Plan {
  GraphSignature signature;
  std::unique_ptr<core::Context> ctx;  ///< clones, input copies, re-pointed views
  core::Graph graph;                   ///< the clones, index for index with the caller's graph
  std::vector<Split> splits;
  /// Backend of every clone computed or allocated here (nodes, inputs, copies).
  std::unordered_map<const core::Tensor*, int> assigned;
  /// Clones of nodes the caller had placed itself: the only tensors of `ctx` whose memory the
  /// allocators do not provide (the rest is reset before the plan is placed again).
  std::vector<core::Tensor*> caller_placed;
  /// Leafs and outputs, by index into graph.leafs / graph.nodes: what the caller writes and
  /// reads through Scheduler::backend_of.
  std::vector<uint32_t> io_leafs, io_nodes;
  /// Each allocator's generation when the plan was placed (empty: not placed).
  std::vector<uint64_t> placed_at;
  uint64_t last_used = 0;
};

/// Flags (core::kFlagShared) the nodes of `p` that something outside their split reads.
void mark_shared(Plan& p);

/// Clones `graph` into a new plan; tensors that `compute_buffers` hold count as unplaced.
std::unique_ptr<Plan> clone_graph(const core::Graph& graph, GraphSignature signature,
                                  std::span<const void* const> compute_buffers);

}  // namespace strata::sched
