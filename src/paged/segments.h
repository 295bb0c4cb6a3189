// Cutting one graph into segments by a boundary schedule and an encode window.
#pragma once

#include <cstddef>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "paged/schedule.h"

namespace strata::paged {

/// A run of consecutive nodes [begin, end) of the graph, with what gates it and what it fires.
struct Segment {
  size_t begin = 0;
  size_t end = 0;
  std::vector<Fence> waits;
  std::vector<Fence> signals;
  bool runs = true;  ///< false: outside the encode window
};

/// A blit resolved to the graph's tensor.
struct ResolvedBlit {
  core::Tensor* node = nullptr;
  core::Tensor* tensor = nullptr;
};

struct SegmentPlan {
  std::vector<Segment> segments;
  size_t first_window_segment = 0;  ///< where blits_in go (valid when `windowed`)
  size_t last_window_segment = 0;   ///< where blits_out go
  bool windowed = false;
  std::vector<ResolvedBlit> blits_in, blits_out;
  size_t cuts_found = 0;
};

/// Segments of `graph` under `schedule` and, when not null, `window`. Errors: a window with
/// exactly one endpoint in the graph, or endpoints out of order (kInvalidArgument, naming the
/// nodes); a blit whose node the window's graph lacks (kInvalidArgument).
Result<SegmentPlan> plan_segments(const core::Graph& graph, const BoundarySchedule& schedule,
                                  const EncodeWindow* window);

}  // namespace strata::paged
