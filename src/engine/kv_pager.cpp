#include "engine/kv_pager.h"

#include <string>
#include <utility>

#include "memory/buffer.h"

namespace strata::engine {
namespace {}  // namespace

KvPager::KvPager(KvPaging& paging, int64_t n_layer, std::vector<backend::Event*> compute,
                 std::vector<int> runs_on, backend::Event& admit)
    : paging_(&paging),
      n_layer_(n_layer),
      timelines_(std::move(compute), std::move(runs_on)),
      admit_(&admit),
      slots_(paging.slots.size()),
      thread_([this](std::stop_token stop) { serve(stop); }) {}

KvPager::~KvPager() {
  thread_.request_stop();
  posted_.notify_all();
}

std::vector<paged::WaitPoint> KvPager::next_waits(int64_t first, int64_t last) const {
  std::vector<paged::WaitPoint> waits;
  const uint64_t base = jobs_posted_ * static_cast<uint64_t>(n_layer_);
  if (last < 0) last = n_layer_ - 1;
  for (int64_t l = first; l <= last; ++l) {
    const paged::Fence admitted{admit_, base + static_cast<uint64_t>(l) + 1};
    const std::string p = "blk." + std::to_string(l) + ".";
    waits.push_back({p + "k_store", admitted});
    waits.push_back({p + "v_store", admitted});
  }
  return waits;
}

void KvPager::post(const Job& job) {
  const uint64_t base = jobs_posted_ * static_cast<uint64_t>(n_layer_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.emplace_back(base, job);
  }
  ++jobs_posted_;  // only once the job is queued: a post that throws leaves the count as it was
  posted_.notify_one();
}

Status KvPager::take_error() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(error_, Status());
}

KvPagingStats KvPager::stats() const {
  KvPagingStats s;
  s.bytes_in = bytes_in_.load();
  s.bytes_out = bytes_out_.load();
  s.stalls = stalls_.load();
  s.stall_seconds = static_cast<double>(stall_ns_.load()) * 1e-9;
  return s;
}

Status KvPager::write_back(const std::vector<KvPaging::Part>& parts, size_t home, size_t first,
                           size_t n) {
  for (const KvPaging::Part& p : parts) {
    if (!p.write_back) continue;
    const uint8_t* src = p.data + first * p.row;
    if (p.remote) {
      // The compute that wrote these cells is done (the pager waited for its layer).
      if (staging_.size() < n * p.row) staging_.resize(n * p.row);
      STRATA_RETURN_IF_ERROR(static_cast<memory::Buffer*>(p.tensor->buffer)
                                 ->read(*p.tensor, staging_.data(), first * p.row, n * p.row));
      src = staging_.data();
    }
    STRATA_RETURN_IF_ERROR(
        paging_->home->write(home + p.home_offset + first * p.row, src, n * p.row));
    bytes_out_ += n * p.row;
  }
  return {};
}

Status KvPager::read_in(const std::vector<KvPaging::Part>& parts, size_t home, size_t n) {
  for (const KvPaging::Part& p : parts) {
    if (!p.remote) {
      STRATA_RETURN_IF_ERROR(paging_->home->read(home + p.home_offset, p.data, n * p.row));
    } else {
      if (staging_.size() < n * p.row) staging_.resize(n * p.row);
      STRATA_RETURN_IF_ERROR(paging_->home->read(home + p.home_offset, staging_.data(), n * p.row));
      STRATA_RETURN_IF_ERROR(static_cast<memory::Buffer*>(p.tensor->buffer)
                                 ->write(*p.tensor, staging_.data(), 0, n * p.row));
    }
    bytes_in_ += n * p.row;
  }
  return {};
}

Status KvPager::page_in(int64_t layer, const Job& job, SlotState& slot, std::stop_token stop) {
  const KvPaging& pg = *paging_;
  const KvPaging::Slot& mem =
      pg.slots[static_cast<size_t>(pg.slot_of_layer[static_cast<size_t>(layer)])];
  // Compute is ready for this layer once the one before it is done; from then on it waits.
  const uint64_t ready_value = job.done_base + static_cast<uint64_t>(layer);
  const int64_t before = layer > 0 ? layer - 1 : n_layer_ - 1;
  StallClock stall;
  auto note_ready = [&] { stall.note(timelines_.reached(before, ready_value)); };
  note_ready();
  if (slot.layer != layer) {
    if (slot.layer >= 0) {
      STRATA_RETURN_IF_ERROR(timelines_.wait(slot.layer, slot.done, stop, "kv pager"));
      if (slot.dirty_end > slot.dirty_begin) {
        const auto first = static_cast<size_t>(slot.dirty_begin);
        const auto n = static_cast<size_t>(slot.dirty_end - slot.dirty_begin);
        // On failure the slot keeps its layer and dirty cells: nothing is lost.
        STRATA_RETURN_IF_ERROR(write_back(mem.k_parts, pg.home_k(slot.layer), first, n));
        STRATA_RETURN_IF_ERROR(write_back(mem.v_parts, pg.home_v(slot.layer), first, n));
      }
      note_ready();
    }
    // From here the slot holds no layer until the load has completed.
    slot.layer = -1;
    slot.dirty_begin = slot.dirty_end = 0;
    const auto n = static_cast<size_t>(job.n_view);
    STRATA_RETURN_IF_ERROR(read_in(mem.k_parts, pg.home_k(layer), n));
    note_ready();
    STRATA_RETURN_IF_ERROR(read_in(mem.v_parts, pg.home_v(layer), n));
    slot.layer = layer;
  }
  // This job writes its cells into the slot: they go home when the slot is next reused.
  const int64_t end = job.first_cell + job.n_new;
  if (slot.dirty_end <= slot.dirty_begin) {
    slot.dirty_begin = job.first_cell;
    slot.dirty_end = end;
  } else {
    slot.dirty_begin = std::min(slot.dirty_begin, job.first_cell);
    slot.dirty_end = std::max(slot.dirty_end, end);
  }
  slot.done = job.done_base + static_cast<uint64_t>(layer) + 1;
  note_ready();
  stall.add_to(stalls_, stall_ns_);
  return {};
}

void KvPager::serve(std::stop_token stop) {
  for (;;) {
    std::pair<uint64_t, Job> next;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      posted_.wait(lock, stop, [this] { return !jobs_.empty(); });
      if (jobs_.empty()) return;        // stopping
      next = std::move(jobs_.front());  // moved: nothing on this thread may fail to allocate
      jobs_.pop_front();
    }
    const auto& [admit_base, job] = next;
    const int64_t last = job.last_layer < 0 ? n_layer_ - 1 : job.last_layer;
    for (int64_t l = job.first_layer; l <= last; ++l) {
      bool failed = false;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        failed = !error_.ok();
      }
      if (!failed) {
        SlotState& slot =
            slots_[static_cast<size_t>(paging_->slot_of_layer[static_cast<size_t>(l)])];
        Status st = out_of_memory_as_error("kv pager", [&] { return page_in(l, job, slot, stop); });
        if (!st.ok()) {
          std::lock_guard<std::mutex> lock(mutex_);
          if (error_.ok()) error_ = st;
        }
      }
      admit_->signal(admit_base + static_cast<uint64_t>(l) + 1);
    }
  }
}

}  // namespace strata::engine
