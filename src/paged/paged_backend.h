// Paged execution on any backend: boundary schedules, segmented runs, encode windows, blits.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "paged/schedule.h"

namespace strata::paged {

struct SegmentPlan;

/// Wraps a backend and runs every graph it is given segment by segment under a persistent
/// boundary schedule: the graph is cut after each cut node it contains, each segment is
/// queued on the wrapped backend on its own, its waits queued before it and its signals after
/// it (so they fire as segments complete: a host thread woken by one sees the segment's
/// writes). With an encode window, only the segments intersecting it run, with its blits.
/// Cleared (no cuts, no window), graphs go to the wrapped backend unchanged. Results are
/// bit-identical either way: the same kernels run on the same nodes in the same order.
///
/// Everything else (transfers, events, synchronize) is the wrapped backend's. Schedules and
/// windows are set from the thread that submits work; they apply to graphs submitted later.
class PagedBackend final : public backend::Backend {
 public:
  explicit PagedBackend(std::unique_ptr<backend::Backend> inner);

  /// Replaces the schedule; one without cuts clears it (waits included).
  void set_schedule(BoundarySchedule schedule);
  /// Replaces the encode window; an empty `first` clears it (unless the window is idle).
  void set_window(EncodeWindow window);
  void clear() {
    set_schedule({});
    set_window({});
  }
  bool active() const { return !schedule_.cuts.empty() || !window_.first.empty() || window_.idle; }

  /// Signals queued by cuts since the last call, in queue order (the engine waits on them).
  std::vector<Fence> take_queued_signals();
  /// Segments queued and cut nodes found since construction.
  uint64_t segments_run() const { return segments_run_; }
  uint64_t cuts_found() const { return cuts_found_; }
  backend::Backend& inner() { return *inner_; }

  backend::Device& device() override { return inner_->device(); }
  Status compute_async(const core::Graph& graph) override;
  Status set_async(core::Tensor& t, const void* src, size_t offset, size_t size) override {
    return inner_->set_async(t, src, offset, size);
  }
  Status get_async(const core::Tensor& t, void* dst, size_t offset, size_t size) override {
    return inner_->get_async(t, dst, offset, size);
  }
  Status copy_async(core::Tensor& dst, const core::Tensor& src) override {
    return inner_->copy_async(dst, src);
  }
  Status signal(backend::Event& event, uint64_t value) override {
    return inner_->signal(event, value);
  }
  Status wait(backend::Event& event, uint64_t value) override { return inner_->wait(event, value); }
  Status synchronize() override { return inner_->synchronize(); }

 private:
  void mark_shared(const core::Graph& graph, const SegmentPlan& plan);

  std::unique_ptr<backend::Backend> inner_;
  BoundarySchedule schedule_;
  EncodeWindow window_;
  std::vector<Fence> queued_signals_;
  uint64_t segments_run_ = 0;
  uint64_t cuts_found_ = 0;
};

}  // namespace strata::paged
