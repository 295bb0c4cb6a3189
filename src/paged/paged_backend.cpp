#include "paged/paged_backend.h"

#include <unordered_map>
#include <utility>

#include "paged/segments.h"

namespace strata::paged {

PagedBackend::PagedBackend(std::unique_ptr<backend::Backend> inner) : inner_(std::move(inner)) {}

void PagedBackend::set_schedule(BoundarySchedule schedule) {
  if (schedule.cuts.empty()) schedule.waits.clear();
  schedule_ = std::move(schedule);
}

void PagedBackend::set_window(EncodeWindow window) {
  if (window.first.empty() && !window.idle) window = {};
  window_ = std::move(window);
}

std::vector<Fence> PagedBackend::take_queued_signals() {
  return std::exchange(queued_signals_, {});
}

// Each segment is queued as a graph of its own, so what a later segment reads (a layer's
// output, the next layer's input) or a blit copies is read outside the run that computes it.
void PagedBackend::mark_shared(const core::Graph& graph, const SegmentPlan& plan) {
  std::unordered_map<const core::Tensor*, size_t> segment_of;
  for (size_t i = 0; i < plan.segments.size(); ++i) {
    for (size_t n = plan.segments[i].begin; n < plan.segments[i].end; ++n) {
      segment_of[graph.nodes[n]] = i;
    }
  }
  for (size_t i = 0; i < plan.segments.size(); ++i) {
    for (size_t n = plan.segments[i].begin; n < plan.segments[i].end; ++n) {
      for (const core::Tensor* src : graph.nodes[n]->src) {
        if (src == nullptr) continue;
        auto* st = const_cast<core::Tensor*>(core::storage_of(src));
        auto it = segment_of.find(st);
        if (it != segment_of.end() && it->second != i) st->flags |= core::kFlagShared;
      }
    }
  }
  for (const auto* blits : {&plan.blits_in, &plan.blits_out}) {
    for (const ResolvedBlit& b : *blits) b.node->flags |= core::kFlagShared;
  }
}

Status PagedBackend::compute_async(const core::Graph& graph) {
  if (!active()) return inner_->compute_async(graph);
  if (window_.idle) return {};
  auto planned = plan_segments(graph, schedule_, window_.first.empty() ? nullptr : &window_);
  if (!planned.ok()) return planned.status();
  const SegmentPlan& plan = *planned;
  cuts_found_ += plan.cuts_found;
  mark_shared(graph, plan);
  core::Graph part;
  for (size_t i = 0; i < plan.segments.size(); ++i) {
    const Segment& seg = plan.segments[i];
    if (!seg.runs) continue;
    for (const Fence& w : seg.waits) STRATA_RETURN_IF_ERROR(inner_->wait(*w.event, w.value));
    if (plan.windowed && i == plan.first_window_segment) {
      for (const ResolvedBlit& b : plan.blits_in)
        STRATA_RETURN_IF_ERROR(inner_->copy_async(*b.node, *b.tensor));
    }
    part.nodes.assign(graph.nodes.begin() + static_cast<std::ptrdiff_t>(seg.begin),
                      graph.nodes.begin() + static_cast<std::ptrdiff_t>(seg.end));
    if (!part.nodes.empty()) STRATA_RETURN_IF_ERROR(inner_->compute_async(part));
    ++segments_run_;
    if (plan.windowed && i == plan.last_window_segment) {
      for (const ResolvedBlit& b : plan.blits_out)
        STRATA_RETURN_IF_ERROR(inner_->copy_async(*b.tensor, *b.node));
    }
    for (const Fence& s : seg.signals) {
      STRATA_RETURN_IF_ERROR(inner_->signal(*s.event, s.value));
      queued_signals_.push_back(s);
    }
  }
  return {};
}

}  // namespace strata::paged
