// `--paged`: every micro-batch runs through the paged path, cut after every layer, each cut
// signalling a timeline the engine waits on.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/event.h"
#include "core/status.h"
#include "paged/paged_backend.h"

namespace strata::engine {

/// Wraps a session's backends in paged backends whose boundary schedules cut the graph after
/// each layer's output ("blk.N.l_out"). Each backend signals its own device's timeline, so
/// whichever device runs a layer reports it; per micro-batch the values rise by n_layer.
class LayerFences {
 public:
  /// Replaces every backend in `backends` by a paged wrapper of it. kUnsupported when a
  /// device has no events.
  static Result<std::unique_ptr<LayerFences>> wrap(
      std::vector<std::unique_ptr<backend::Backend>>& backends, int64_t n_layer);

  /// Sets the schedules for the next micro-batch (call before queuing it), with `waits` on
  /// every backend. Returns the base of its timeline values: layer l is done once a backend's
  /// timeline reaches base + l + 1.
  uint64_t arm(std::span<const paged::WaitPoint> waits = {});
  /// The same for a run restricted to layers [first, last] by an encode window: only their
  /// boundaries are expected.
  uint64_t arm(std::span<const paged::WaitPoint> waits, int64_t first, int64_t last);
  /// Sets `window` on every backend (an empty `first` clears it).
  void set_window(const paged::EncodeWindow& window);
  /// Sets `window` on the backend at `index` (the session's order).
  void set_window(size_t index, paged::EncodeWindow window) {
    backends_[index]->set_window(std::move(window));
  }
  /// After the micro-batch is queued: checks that every layer boundary was found once, and
  /// with `expected` (per layer, a backend index) that each was found on that backend.
  Status collect(const std::vector<int>* expected = nullptr);
  /// Blocks until every signal collected so far has fired (kInternal after `timeout`).
  Status wait(std::chrono::nanoseconds timeout);
  /// After a failed decode has been synchronized: raises every timeline past all values
  /// armed, so nothing waits for layers of micro-batches that never ran.
  void abandon();
  /// Layer boundaries signalled since construction.
  uint64_t signals() const { return signals_; }
  /// The timelines, one per backend in the session's order.
  std::vector<backend::Event*> events() const;

 private:
  LayerFences() = default;

  std::vector<paged::PagedBackend*> backends_;
  std::vector<std::unique_ptr<backend::Event>> events_;  // one per backend, on its device
  std::vector<std::string> layer_ends_;
  std::vector<uint64_t> pending_;  // per backend: the value its last collected signal reaches
  uint64_t base_ = 0;
  uint64_t signals_ = 0;
  size_t expected_ = 0;  // boundaries the armed run signals
};

}  // namespace strata::engine
