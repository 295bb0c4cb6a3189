// The weight pager: a long-lived thread that reads streamed layers' weights from their home
// (the model file, with explicit, counted reads) into their slots before compute reaches
// them, driven by the layer timelines.
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
#include "engine/layer_timelines.h"
#include "model/arch/weights.h"
#include "paged/schedule.h"

namespace strata::engine {

/// What weight streaming read, and how long compute had to wait for it.
struct WeightStreamingStats {
  uint64_t bytes_read = 0;  ///< weight bytes read from the home into slots
  uint64_t stalls = 0;      ///< layer uses compute reached before their weights were in
  double stall_seconds = 0;
};

/// Runs compute one use of a layer at a time, in the order runs are queued: a token-major run
/// uses every layer in turn, a band of a banded prefill its own layers. For each use of a
/// streamed layer, in that order, the pager makes sure the layer's slot holds it: it waits
/// until the slot's previous layer has had its last use so far (its timeline value), reads the
/// layer in, and then admits the use (the admit timeline; the layer's segment waits for it).
/// A layer still in its slot is admitted at once, so a band's layers are read once for all its
/// micro-batches, and the next band's are read while this one runs when the slots allow.
/// Errors (a short or failed read, a timeline that never advances) are kept for take_error();
/// every use is still admitted, so compute never waits forever.
class WeightPager {
 public:
  /// `compute`: the layer timelines (one per backend); `runs_on[l]` indexes the one whose
  /// backend runs layer l. `admit` is a host event owned by the caller. Fails when the home
  /// cannot be opened.
  static Result<std::unique_ptr<WeightPager>> create(const model::WeightStream& stream,
                                                     std::vector<backend::Event*> compute,
                                                     std::vector<int> runs_on,
                                                     backend::Event& admit);
  ~WeightPager();

  /// The waits of the next run, which computes layers [first, last]: each streamed layer's
  /// segment waits for its admission. post() must follow with the same layers.
  std::vector<paged::WaitPoint> next_waits(int64_t first, int64_t last) const;
  /// Queues the uses of that run; layer l is done once its timeline reaches done_base + l + 1.
  void post(int64_t first, int64_t last, uint64_t done_base);
  /// The first error since the last call.
  Status take_error();
  WeightStreamingStats stats() const;

 private:
  struct Use {
    int64_t layer = 0;
    uint64_t done = 0;
    uint64_t admit = 0;
  };
  struct SlotState {
    int64_t layer = -1;  ///< whose weights it holds
    uint64_t done = 0;   ///< timeline value at which that layer's last use so far completes
  };
  WeightPager(const model::WeightStream& stream, int fd, std::vector<backend::Event*> compute,
              std::vector<int> runs_on, backend::Event& admit);
  void serve(std::stop_token stop);
  Status bring_in(const Use& use, std::stop_token stop);
  Status read_layer(const model::WeightStream::Layer& layer);
  // A piece whose tensor is split or lies in another process's memory, written through its
  // buffer.
  Status write_through_buffer(const model::WeightStream::Piece& p, memory::Buffer& buffer);
  // Reads a piece's bytes from the file with explicit reads, counting them.
  Status read_file(const model::WeightStream::Piece& p, uint8_t* dst);

  const model::WeightStream* stream_;
  int fd_;
  LayerTimelines timelines_;
  backend::Event* admit_;
  std::vector<SlotState> slots_;  // pager thread only
  std::vector<uint8_t> staging_;  // pager thread only: a split tensor's bytes on their way
  Use previous_{-1, 0, 0};        // pager thread only: the use before the current one
  uint64_t uses_posted_ = 0;      // caller thread only

  mutable std::mutex mutex_;
  std::condition_variable_any posted_;
  std::deque<Use> uses_;
  Status error_;
  std::atomic<uint64_t> bytes_read_{0}, stalls_{0}, stall_ns_{0};
  std::jthread thread_;  // last: starts once everything it uses exists
};

}  // namespace strata::engine
