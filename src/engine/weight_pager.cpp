#include "engine/weight_pager.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "meta/meta_buffer.h"

namespace strata::engine {

Result<std::unique_ptr<WeightPager>> WeightPager::create(const model::WeightStream& stream,
                                                         std::vector<backend::Event*> compute,
                                                         std::vector<int> runs_on,
                                                         backend::Event& admit) {
  const int fd = ::open(stream.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return error(ErrorCode::kIo,
                 "streaming weights: cannot open " + stream.path + ": " + std::strerror(errno));
  }
  std::unique_ptr<WeightPager> p(
      new WeightPager(stream, fd, std::move(compute), std::move(runs_on), admit));
  return p;
}

WeightPager::WeightPager(const model::WeightStream& stream, int fd,
                         std::vector<backend::Event*> compute, std::vector<int> runs_on,
                         backend::Event& admit)
    : stream_(&stream),
      fd_(fd),
      timelines_(std::move(compute), std::move(runs_on)),
      admit_(&admit),
      slots_(static_cast<size_t>(stream.n_slots)),
      thread_([this](std::stop_token stop) { serve(stop); }) {}

WeightPager::~WeightPager() {
  thread_.request_stop();
  posted_.notify_all();
  thread_.join();
  ::close(fd_);
}

std::vector<paged::WaitPoint> WeightPager::next_waits(int64_t first, int64_t last) const {
  std::vector<paged::WaitPoint> waits;
  uint64_t admit = uses_posted_;
  for (const model::WeightStream::Layer& l : stream_->layers) {
    if (l.layer < first || l.layer > last) continue;
    // The norm that opens the layer reads its first weight; the wait gates its whole segment.
    waits.push_back({"blk." + std::to_string(l.layer) + ".attn_norm", {admit_, ++admit}});
  }
  return waits;
}

void WeightPager::post(int64_t first, int64_t last, uint64_t done_base) {
  uint64_t admit = uses_posted_;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const model::WeightStream::Layer& l : stream_->layers) {
      if (l.layer < first || l.layer > last) continue;
      uses_.push_back({l.layer, done_base + static_cast<uint64_t>(l.layer) + 1, ++admit});
    }
  }
  uses_posted_ = admit;  // only once queued: a post that throws leaves the count as it was
  posted_.notify_one();
}

Status WeightPager::take_error() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(error_, Status());
}

WeightStreamingStats WeightPager::stats() const {
  WeightStreamingStats s;
  s.bytes_read = bytes_read_.load();
  s.stalls = stalls_.load();
  s.stall_seconds = static_cast<double>(stall_ns_.load()) * 1e-9;
  return s;
}

Status WeightPager::read_layer(const model::WeightStream::Layer& layer) {
  for (const model::WeightStream::Piece& p : layer.pieces) {
    auto* buffer = static_cast<memory::Buffer*>(p.tensor->buffer);
    if (meta::shards_of(*p.tensor) != nullptr || !buffer->is_host()) {
      // A split tensor is scattered to its shards, and memory of another process is written
      // through its buffer: from the mapping, so a rank with its own copy of the file reads
      // the bytes there instead of receiving them.
      STRATA_RETURN_IF_ERROR(write_through_buffer(p, *buffer));
      continue;
    }
    STRATA_RETURN_IF_ERROR(read_file(p, static_cast<uint8_t*>(p.tensor->data)));
  }
  return {};
}

namespace {

// Whether any of t's bytes (its own, or a shard's) lie in memory this process cannot address.
bool lies_in_another_process(const core::Tensor& t) {
  if (const meta::Sharded* s = meta::shards_of(t)) {
    for (const core::Tensor* shard : s->shard) {
      if (shard != nullptr && !static_cast<memory::Buffer*>(shard->buffer)->is_host()) return true;
    }
    return false;
  }
  return !static_cast<memory::Buffer*>(t.buffer)->is_host();
}

}  // namespace

Status WeightPager::write_through_buffer(const model::WeightStream::Piece& p,
                                         memory::Buffer& buffer) {
  // Host memory gets the bytes by explicit reads, as unsharded tensors do.
  const void* src = lies_in_another_process(*p.tensor) ? p.mapped : nullptr;
  if (src == nullptr) {
    if (staging_.size() < p.size) staging_.resize(p.size);
    STRATA_RETURN_IF_ERROR(read_file(p, staging_.data()));
    src = staging_.data();
  } else {
    bytes_read_ += p.size;
  }
  return buffer.write(*p.tensor, src, 0, p.size);
}

Status WeightPager::read_file(const model::WeightStream::Piece& p, uint8_t* dst) {
  size_t done = 0;
  while (done < p.size) {
    const ssize_t got =
        ::pread(fd_, dst + done, p.size - done, static_cast<off_t>(p.file_offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      const std::string why = got < 0 ? std::strerror(errno) : "the file ends early";
      return error(ErrorCode::kIo, "streaming weights: reading '" + p.tensor->name + "' from " +
                                       stream_->path + ": " + why);
    }
    done += static_cast<size_t>(got);
    bytes_read_ += static_cast<uint64_t>(got);
  }
  return {};
}

Status WeightPager::bring_in(const Use& use, std::stop_token stop) {
  const model::WeightStream::Layer* layer = stream_->find(use.layer);
  SlotState& slot = slots_[static_cast<size_t>(layer->slot)];
  // Compute is ready for this use once the one before it is done; from then on it waits.
  StallClock stall;
  auto note_ready = [&] {
    stall.note(previous_.layer < 0 || timelines_.reached(previous_.layer, previous_.done));
  };
  note_ready();
  if (slot.layer != use.layer) {
    if (slot.layer >= 0)
      STRATA_RETURN_IF_ERROR(timelines_.wait(slot.layer, slot.done, stop, "weight pager"));
    note_ready();
    // From here the slot holds no layer until the read has completed.
    slot.layer = -1;
    STRATA_RETURN_IF_ERROR(read_layer(*layer));
    slot.layer = use.layer;
  }
  slot.done = use.done;
  note_ready();
  stall.add_to(stalls_, stall_ns_);
  return {};
}

void WeightPager::serve(std::stop_token stop) {
  for (;;) {
    Use use;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      posted_.wait(lock, stop, [this] { return !uses_.empty(); });
      if (uses_.empty()) return;  // stopping
      use = uses_.front();
      uses_.pop_front();
    }
    bool failed = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      failed = !error_.ok();
    }
    if (!failed) {
      Status st = out_of_memory_as_error("weight pager", [&] { return bring_in(use, stop); });
      if (!st.ok()) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (error_.ok()) error_ = st;
      }
    }
    previous_ = use;
    admit_->signal(use.admit);
  }
}

}  // namespace strata::engine
