// Graphs: the nodes reachable from a set of outputs, in topological order.
#pragma once

#include <span>
#include <vector>

#include "core/tensor.h"

namespace strata::core {

/// Nodes (tensors produced by an op, views included) in an order where every source comes
/// first, and the leafs they read. Building a graph is pure metadata.
struct Graph {
  std::vector<Tensor*> nodes;
  std::vector<Tensor*> leafs;
};

/// Collects everything `outputs` depend on. Outputs are flagged kFlagOutput; unnamed nodes
/// get a name from their position ("node_12") so identity is stable across rebuilds. Matrix
/// products that read the same activations (Q, K and V; gate and up) come one after another
/// where their other sources allow it, so that a backend may take them in one pass.
Graph build_graph(std::span<Tensor* const> outputs);

}  // namespace strata::core
