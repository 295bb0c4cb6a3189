#include "mpi/remote_backend.h"

#include "backend/checks.h"
#include "mpi/channel.h"
#include "mpi/rank_group.h"
#include "mpi/remote_buffer.h"
#include "mpi/remote_device.h"
#include "mpi/signals.h"
#include "mpi/transport.h"

namespace strata::mpi {
namespace {

Command command(CommandKind kind) {
  Command c;
  c.kind = kind;
  return c;
}

}  // namespace

RemoteBackend::RemoteBackend(RemoteDevice& device, std::chrono::nanoseconds wait_timeout)
    : device_(&device), wait_timeout_(wait_timeout) {}

RemoteBackend::~RemoteBackend() {
  for (const auto& [structure, shape] : shapes_) {
    Command c = command(CommandKind::kDropGraph);
    c.queue = device_->queue();
    c.v[0] = shape.key;
    queue_.push([r = device_->rank(), c](std::stop_token) { return post(r, c); },
                /*runs_after_error=*/true);
  }
  (void)synchronize();
}

backend::Device& RemoteBackend::device() {
  return *device_;
}

Result<Placement> RemoteBackend::placement_of(const core::Tensor& t) const {
  if (t.data == nullptr) {
    return error(ErrorCode::kInternal,
                 std::string(device_->name()) + ": tensor '" + t.name + "' is not placed");
  }
  const auto spot = find_remote(t.data);
  if (!spot || spot->rank != device_->rank()) {
    return error(ErrorCode::kInternal, std::string(device_->name()) + ": tensor '" + t.name +
                                           "' is not in this rank's memory");
  }
  return Placement{spot->buffer, spot->offset};
}

Status RemoteBackend::compute_async(const core::Graph& graph) {
  if (graph.nodes.empty()) return {};
  EncodedGraph enc = encode_graph(graph);
  std::vector<Placement> now;
  now.reserve(enc.tensors.size());
  for (const core::Tensor* t : enc.tensors) {
    auto p = placement_of(*t);
    if (!p.ok()) return p.status();
    now.push_back(*p);
  }
  const int r = device_->rank();
  auto it = shapes_.find(enc.structure);
  if (it == shapes_.end()) {
    if (shapes_.size() >= kGraphs) {
      auto old = shapes_.find(lru_.back());
      Command drop = command(CommandKind::kDropGraph);
      drop.queue = device_->queue();
      drop.v[0] = old->second.key;
      queue_.push([r, drop](std::stop_token) { return post(r, drop); });
      shapes_.erase(old);
      lru_.pop_back();
    }
    Shape s;
    s.key = device_->new_graph_key();
    Command define = command(CommandKind::kDefineGraph);
    define.queue = device_->queue();
    define.v[0] = s.key;
    queue_.push([r, define, bytes = enc.structure](std::stop_token) {
      return post(r, define, bytes.data(), bytes.size());
    });
    lru_.push_front(enc.structure);
    s.lru = lru_.begin();
    it = shapes_.emplace(std::move(enc.structure), std::move(s)).first;
  } else {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
  }
  Shape& s = it->second;
  Command run = command(CommandKind::kRunGraph);
  run.queue = device_->queue();
  run.v[0] = s.key;
  std::string changes = encode_changes(s.placements, now);
  s.placements = std::move(now);
  queue_.push([r, run, changes = std::move(changes)](std::stop_token) {
    return post(r, run, changes.data(), changes.size());
  });
  return {};
}

Status RemoteBackend::set_async(core::Tensor& t, const void* src, size_t offset, size_t size) {
  STRATA_RETURN_IF_ERROR(backend::check_tensor_range(t, offset, size));
  auto p = placement_of(t);
  if (!p.ok()) return p.status();
  if (size == 0) return {};
  Command c = command(CommandKind::kWrite);
  c.queue = device_->queue();
  c.v[0] = p->buffer;
  c.v[1] = p->offset + offset;
  queue_.push(
      [r = device_->rank(), c, src, size](std::stop_token) { return post(r, c, src, size); });
  return {};
}

Status RemoteBackend::get_async(const core::Tensor& t, void* dst, size_t offset, size_t size) {
  STRATA_RETURN_IF_ERROR(backend::check_tensor_range(t, offset, size));
  if (size == 0) return {};
  const auto* buf = dynamic_cast<const RemoteBuffer*>(static_cast<const memory::Buffer*>(t.buffer));
  if (buf == nullptr) {
    return error(ErrorCode::kInternal, std::string(device_->name()) + ": tensor '" + t.name +
                                           "' is not in a rank's memory");
  }
  queue_.push([buf, &t, dst, offset, size, q = device_->queue()](std::stop_token) {
    return buf->read_on(q, t, dst, offset, size);
  });
  return {};
}

Status RemoteBackend::copy_async(core::Tensor& dst, const core::Tensor& src) {
  if (src.data == nullptr || dst.data == nullptr || src.type != dst.type || src.ne != dst.ne ||
      !src.is_contiguous() || !dst.is_contiguous()) {
    return error(ErrorCode::kInvalidArgument,
                 std::string(device_->name()) + ": cannot copy '" + src.name + "' (" +
                     core::describe(src) + ") into '" + dst.name + "' (" + core::describe(dst) +
                     "): both must be placed and contiguous, of one type and shape");
  }
  auto to = placement_of(dst);
  if (!to.ok()) return to.status();
  const size_t n = dst.nbytes();
  if (n == 0) return {};
  const int r = device_->rank();
  const auto from = find_remote(src.data);
  if (!from) {
    if (src.buffer != nullptr && !static_cast<const memory::Buffer*>(src.buffer)->is_host()) {
      return error(ErrorCode::kUnsupported, std::string(device_->name()) + ": cannot copy '" +
                                                src.name + "' from memory of another kind");
    }
    Command c = command(CommandKind::kWrite);
    c.queue = device_->queue();
    c.v[0] = to->buffer;
    c.v[1] = to->offset;
    queue_.push([r, c, p = src.data, n](std::stop_token) { return post(r, c, p, n); });
    return {};
  }
  if (from->rank == r) {
    Command c = command(CommandKind::kCopy);
    c.queue = device_->queue();
    c.v[0] = to->buffer;
    c.v[1] = to->offset;
    c.v[2] = from->buffer;
    c.v[3] = from->offset;
    c.v[4] = n;
    queue_.push([r, c](std::stop_token) { return post(r, c); });
    return {};
  }
  // Between two ranks, directly: the source rank sends once everything it was sent before
  // is done, which the caller's fences make include the work that wrote `src`.
  // (Any queue of the source rank may send: the fences say the bytes are written.)
  queue_.push(
      [r, q = device_->queue(), s = from->rank, to = *to, from = *from, n](std::stop_token) {
        const int tag = next_tag();
        Command out = command(CommandKind::kSendTo);
        out.v[0] = from.buffer;
        out.v[1] = from.offset;
        out.v[2] = n;
        out.v[3] = static_cast<uint64_t>(r);
        out.v[4] = static_cast<uint64_t>(tag);
        Command in = command(CommandKind::kRecvFrom);
        in.queue = q;
        in.v[0] = to.buffer;
        in.v[1] = to.offset;
        in.v[2] = n;
        in.v[3] = static_cast<uint64_t>(s);
        in.v[4] = static_cast<uint64_t>(tag);
        return post_pair(s, out, r, in);
      });
  return {};
}

Status RemoteBackend::signal(backend::Event& event, uint64_t value) {
  STRATA_RETURN_IF_ERROR(backend::check_event_owner(*device_, event));
  queue_.push(
      [this, &event, value](std::stop_token) {
        if (queue_.failed()) {
          // Work that failed on rank 0's side (a send) never reached the rank.
          event.signal_failed(value, queue_.kept_error());
          return Status();
        }
        const int r = device_->rank();
        Command c = command(CommandKind::kSignal);
        c.queue = device_->queue();
        c.v[0] = expect_signal(r, this, event, value);
        Status st = post(r, c);
        if (!st.ok()) signalled(c.v[0], st);
        return st;
      },
      /*runs_after_error=*/true);
  return {};
}

Status RemoteBackend::wait(backend::Event& event, uint64_t value) {
  queue_.push([this, &event, value](std::stop_token stop) {
    const backend::WaitResult res = event.wait(value, wait_timeout_, stop);
    if (res == backend::WaitResult::kReached) return event.failure_at(value);
    return backend::wait_failure(*device_, event, value, res, wait_timeout_);
  });
  return {};
}

Status RemoteBackend::all_reduce_async(backend::Collective& group, int /*member*/,
                                       const core::Tensor& src, core::Tensor& dst) {
  auto* g = dynamic_cast<RankGroup*>(&group);
  if (g == nullptr) {
    return error(ErrorCode::kUnsupported,
                 std::string(device_->name()) + ": all-reduces only with a group of MPI ranks");
  }
  STRATA_RETURN_IF_ERROR(check_all_reduce(src, dst));
  auto from = placement_of(src);
  if (!from.ok()) return from.status();
  auto to = placement_of(dst);
  if (!to.ok()) return to.status();
  Command c = command(CommandKind::kAllReduce);
  c.queue = device_->queue();
  c.v[0] = g->id();
  c.v[1] = from->buffer;
  c.v[2] = from->offset;
  c.v[3] = to->buffer;
  c.v[4] = to->offset;
  const auto n = static_cast<uint64_t>(src.nelements());
  queue_.push([r = device_->rank(), c, n](std::stop_token) { return post(r, c, &n, sizeof n); },
              /*runs_after_error=*/true);
  return {};
}

Status RemoteBackend::synchronize() {
  Status first = queue_.synchronize();
  const int r = device_->rank();
  Command sync = command(CommandKind::kSync);
  sync.queue = device_->queue();
  Status remote = ask_status(r, sync);
  if (first.ok()) first = remote;
  // The rank has answered every signal queued before the sync; rank 0's listener may not have
  // raised them all yet, and the caller may destroy their events once this returns.
  if (!await_signals(this, wait_timeout_) && first.ok()) {
    first = error(ErrorCode::kInternal,
                  std::string(device_->name()) + ": the rank's signals did not arrive in time");
  }
  return first;
}

}  // namespace strata::mpi
