// What the pagers (KV and weights) share: when a layer is done, read off the timeline of the
// backend that runs it, and how long compute waited for a pager.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stop_token>
#include <vector>

#include "backend/event.h"
#include "core/status.h"

namespace strata::engine {

/// The layer timelines of a paged session (see LayerFences): one per backend, and per layer
/// the backend that runs it. Only that backend's timeline says a layer is done: another
/// backend may already be working on the next micro-batch (pipelining) while this one runs.
class LayerTimelines {
 public:
  LayerTimelines(std::vector<backend::Event*> compute, std::vector<int> runs_on)
      : compute_(std::move(compute)), runs_on_(std::move(runs_on)) {}

  /// Whether layer `layer`'s timeline has reached `value`.
  bool reached(int64_t layer, uint64_t value) const { return of(layer).value() >= value; }
  /// Blocks until it has; a layer nobody signals within five minutes, or a stop, is an error
  /// naming `who` (the pager).
  Status wait(int64_t layer, uint64_t value, std::stop_token stop, const char* who) const;

 private:
  backend::Event& of(int64_t layer) const {
    return *compute_[static_cast<size_t>(runs_on_[static_cast<size_t>(layer)])];
  }

  std::vector<backend::Event*> compute_;
  std::vector<int> runs_on_;
};

/// How long compute waited for one admission: from the moment it was ready for it (noted by
/// the pager as it works) until the admission.
class StallClock {
 public:
  /// Starts the clock the first time `ready` holds.
  void note(bool ready) {
    if (since_ == Clock::time_point{} && ready) since_ = Clock::now();
  }
  /// Adds the stall, if compute was ready before now, to the counters.
  void add_to(std::atomic<uint64_t>& stalls, std::atomic<uint64_t>& stall_ns) const;

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point since_{};
};

}  // namespace strata::engine
