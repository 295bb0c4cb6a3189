// Runs a whole graph on the CPU kernels with a thread pool.
#pragma once

#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "cpu/thread_pool.h"

namespace strata::cpu {

/// Computes every node of `g` in order on all of `pool`'s threads: one pool run for the whole
/// graph, a barrier after each pass of computed nodes (passes.h: one node, or neighbours that
/// need none between them); view nodes and leafs are skipped. `scratch` is
/// grown to the largest node's work size and kept for the next call.
///
/// Before anything runs, every node is checked (kUnsupported for what the kernels cannot
/// do) and every computed node and its sources must be placed (kInternal naming the tensor).
/// A node that fails while running (an id out of range: kOutOfRange) stops the graph there;
/// the error names the node, and later nodes are not computed.
///
/// `barriers` kPerNode puts a barrier after every node instead (as does STRATA_CPU_PASSES=0
/// in the environment): the same results, for tests and measurements.
enum class Barriers : uint8_t { kPerPass, kPerNode };
Status compute_graph(const core::Graph& g, ThreadPool& pool, std::vector<uint8_t>& scratch,
                     Barriers barriers = Barriers::kPerPass);

}  // namespace strata::cpu
