#include "engine/layer_fences.h"

#include <algorithm>

#include "backend/device.h"

namespace strata::engine {

Result<std::unique_ptr<LayerFences>> LayerFences::wrap(
    std::vector<std::unique_ptr<backend::Backend>>& backends, int64_t n_layer) {
  std::unique_ptr<LayerFences> f(new LayerFences());
  for (int64_t l = 0; l < n_layer; ++l)
    f->layer_ends_.push_back("blk." + std::to_string(l) + ".l_out");
  for (auto& b : backends) {
    auto ev = b->device().make_event();
    if (!ev.ok()) return ev.status().with_context("--paged");
    f->events_.push_back(std::move(ev).value());
    auto wrapped = std::make_unique<paged::PagedBackend>(std::move(b));
    f->backends_.push_back(wrapped.get());
    b = std::move(wrapped);
  }
  f->pending_.assign(f->backends_.size(), 0);
  return f;
}

uint64_t LayerFences::arm(std::span<const paged::WaitPoint> waits) {
  return arm(waits, 0, static_cast<int64_t>(layer_ends_.size()) - 1);
}

void LayerFences::set_window(const paged::EncodeWindow& window) {
  for (paged::PagedBackend* b : backends_) b->set_window(window);
}

uint64_t LayerFences::arm(std::span<const paged::WaitPoint> waits, int64_t first, int64_t last) {
  expected_ = static_cast<size_t>(last - first + 1);
  for (size_t b = 0; b < backends_.size(); ++b) {
    // Left over from a micro-batch that failed after queuing part of its segments.
    (void)backends_[b]->take_queued_signals();
    paged::BoundarySchedule s;
    s.cuts.reserve(layer_ends_.size());
    for (size_t l = 0; l < layer_ends_.size(); ++l)
      s.cuts.push_back({layer_ends_[l], {events_[b].get(), base_ + l + 1}});
    s.waits.assign(waits.begin(), waits.end());
    backends_[b]->set_schedule(std::move(s));
  }
  const uint64_t base = base_;
  base_ += layer_ends_.size();
  return base;
}

void LayerFences::abandon() {
  for (auto& e : events_) e->signal(base_);
  std::fill(pending_.begin(), pending_.end(), 0);
}

std::vector<backend::Event*> LayerFences::events() const {
  std::vector<backend::Event*> out;
  for (const auto& e : events_) out.push_back(e.get());
  return out;
}

Status LayerFences::collect(const std::vector<int>* expected) {
  size_t found = 0;
  const uint64_t base = base_ - layer_ends_.size();
  for (size_t b = 0; b < backends_.size(); ++b) {
    for (const paged::Fence& f : backends_[b]->take_queued_signals()) {
      pending_[b] = std::max(pending_[b], f.value);
      ++found;
      const uint64_t layer = f.value - base - 1;
      if (expected != nullptr && layer < expected->size() &&
          (*expected)[static_cast<size_t>(layer)] != static_cast<int>(b)) {
        return error(ErrorCode::kInternal, "--paged: layer " + std::to_string(layer) + " ran on " +
                                               std::string(backends_[b]->device().name()) +
                                               ", not where expected");
      }
    }
  }
  signals_ += found;
  if (found != expected_) {
    return error(ErrorCode::kInternal, "--paged: " + std::to_string(found) + " of " +
                                           std::to_string(expected_) +
                                           " layer boundaries (blk.N.l_out) found in the graph");
  }
  return {};
}

Status LayerFences::wait(std::chrono::nanoseconds timeout) {
  for (size_t b = 0; b < backends_.size(); ++b) {
    if (pending_[b] == 0) continue;
    if (events_[b]->wait(pending_[b], timeout) != backend::WaitResult::kReached) {
      return error(ErrorCode::kInternal, "--paged: " + std::string(backends_[b]->device().name()) +
                                             " did not signal layer completion in time");
    }
  }
  return {};
}

}  // namespace strata::engine
