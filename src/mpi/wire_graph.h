// A graph as bytes, so another rank can run it: its structure (sent once per shape) apart
// from where its tensors are placed (sent as changes on every run).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph.h"
#include "core/status.h"

namespace strata::mpi {

/// The structure of a graph: every node and every tensor a node reads (its sources and the
/// tensors whose bytes views use), each with op, parameters, type, shape, strides, flags and
/// name. `tensors` lists them in the encoded order; their placements go separately.
struct EncodedGraph {
  std::string structure;
  std::vector<const core::Tensor*> tensors;
};

EncodedGraph encode_graph(const core::Graph& graph);

/// Where a tensor's bytes are on the rank that runs the graph.
struct Placement {
  uint64_t buffer = 0;
  uint64_t offset = 0;
  friend bool operator==(const Placement&, const Placement&) = default;
};

/// The placements of `now` that differ from `before` (all of them when sizes differ), as bytes.
std::string encode_changes(const std::vector<Placement>& before, const std::vector<Placement>& now);
/// Applies encode_changes' bytes to `placements`; kMalformed for bytes it did not make.
Status apply_changes(std::string_view bytes, std::vector<Placement>& placements);

/// A graph rebuilt from its structure: tensors with everything but their memory.
struct DecodedGraph {
  std::deque<core::Tensor> tensors;  // stable addresses
  core::Graph graph;                 // the nodes, in order
};

/// kMalformed for bytes encode_graph did not make.
Result<DecodedGraph> decode_graph(std::string_view structure);

}  // namespace strata::mpi
