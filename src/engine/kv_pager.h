// The KV pager: a long-lived thread that makes each layer's cache resident before compute
// reaches it and writes back what compute wrote, driven by the layer timelines.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "backend/event.h"
#include "core/status.h"
#include "engine/kv_cache.h"
#include "engine/layer_timelines.h"
#include "paged/schedule.h"

namespace strata::engine {

/// What the pager moved, and how long compute had to wait for it.
struct KvPagingStats {
  uint64_t bytes_in = 0;   ///< home to resident
  uint64_t bytes_out = 0;  ///< resident to home (only cells that were written)
  uint64_t stalls = 0;     ///< layers compute reached before they were resident
  double stall_seconds = 0;
};

/// For each micro-batch (a job) and each layer l in order: waits until the layer that last
/// used l's slot is done (its timeline value), writes that layer's written cells back to the
/// home, reads layer l's cells in, and admits layer l (the admit timeline; compute's cache
/// writes of layer l wait for it). A layer already resident in its slot is admitted at once.
/// Errors (the home's I/O, a timeline that never advances) are kept for take_error(); the
/// pager then still admits every layer, so compute never waits forever.
class KvPager {
 public:
  /// A micro-batch: layer l is done once the timeline of the backend that runs it reaches
  /// done_base + l + 1 (see LayerFences); it writes cells [first_cell, first_cell + n_new)
  /// and reads the first n_view.
  struct Job {
    uint64_t done_base = 0;
    int64_t first_cell = 0;
    int64_t n_new = 0;
    int64_t n_view = 0;
    /// The layers the run computes (a band of a banded prefill; -1: every layer).
    int64_t first_layer = 0;
    int64_t last_layer = -1;
  };

  /// `compute`: the layer timelines (one per backend); `runs_on[l]` indexes the one whose
  /// backend runs layer l. `admit` is a host event owned by the caller.
  KvPager(KvPaging& paging, int64_t n_layer, std::vector<backend::Event*> compute,
          std::vector<int> runs_on, backend::Event& admit);
  ~KvPager();

  /// The waits the next job's graph needs: each layer's cache writes wait for its admission
  /// (layers [first, last]; last -1: every layer).
  std::vector<paged::WaitPoint> next_waits(int64_t first = 0, int64_t last = -1) const;
  /// Queues the next job (after next_waits(), before its graph is queued).
  void post(const Job& job);
  /// The first error since the last call.
  Status take_error();
  KvPagingStats stats() const;

 private:
  struct SlotState {
    int64_t layer = -1;  ///< whose cells it holds
    uint64_t done = 0;   ///< timeline value at which that layer's last use is complete
    int64_t dirty_begin = 0, dirty_end = 0;
  };
  void serve(std::stop_token stop);
  Status page_in(int64_t layer, const Job& job, SlotState& slot, std::stop_token stop);
  // Writes cells [first, first + n) of a slot's parts to the home region at `home`.
  Status write_back(const std::vector<KvPaging::Part>& parts, size_t home, size_t first, size_t n);
  // Reads the first n cells of the home region at `home` into a slot's parts.
  Status read_in(const std::vector<KvPaging::Part>& parts, size_t home, size_t n);

  KvPaging* paging_;
  int64_t n_layer_;
  LayerTimelines timelines_;
  backend::Event* admit_;
  std::vector<SlotState> slots_;  // pager thread only
  std::vector<uint8_t> staging_;  // pager thread only: cells of a part in another process
  uint64_t jobs_posted_ = 0;      // caller thread only

  mutable std::mutex mutex_;
  std::condition_variable_any posted_;
  std::deque<std::pair<uint64_t, Job>> jobs_;  // with the job's admit base
  Status error_;
  std::atomic<uint64_t> bytes_in_{0}, bytes_out_{0}, stalls_{0}, stall_ns_{0};
  std::jthread thread_;  // last: starts once everything it uses exists
};

}  // namespace strata::engine
