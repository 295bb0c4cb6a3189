// What a paged run is told: where to cut a graph, what to signal and wait for, what to run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/event.h"
#include "core/tensor.h"

namespace strata::paged {

/// An event and a value: what a signal raises the event to, or what a wait needs it to reach.
struct Fence {
  backend::Event* event = nullptr;
  uint64_t value = 0;
};

/// The graph is cut after `node`; once the segment that ends there has completed, `signal`
/// fires (none when its event is null). The event must belong to the backend's device.
struct Cut {
  std::string node;
  Fence signal;
};

/// The segment that contains `node` starts only once `fence` is reached (any device's event).
struct WaitPoint {
  std::string node;
  Fence fence;
};

/// Cut and wait nodes, matched by name in every graph the backend runs (so one schedule
/// serves every rebuild of a graph and every split cut from it). A name that denotes a view
/// stands for the node that produces the view's data. A schedule without cuts is the
/// cleared state: graphs run whole on the ordinary path.
struct BoundarySchedule {
  std::vector<Cut> cuts;
  std::vector<WaitPoint> waits;
};

/// A copy between a graph activation (by name) and a tensor outside the graph.
struct Blit {
  std::string node;
  core::Tensor* tensor = nullptr;
};

/// Only the segments that intersect the node range [first, last] (inclusive, by name) run.
/// `blits_in` copy their tensor into the named activation at the start of the window's first
/// segment (after its waits, before its ops); `blits_out` copy the named activation out at
/// the end of its last segment. A graph containing neither endpoint runs whole; one that
/// contains exactly one is an error. An empty `first` is the cleared state, unless `idle`:
/// then no segment of any graph runs (a device with no part in a band of layers).
struct EncodeWindow {
  std::string first;
  std::string last;
  std::vector<Blit> blits_in;
  std::vector<Blit> blits_out;
  bool idle = false;
  /// Graphs containing neither endpoint do not run either (instead of running whole).
  bool only_this_graph = false;
};

}  // namespace strata::paged
