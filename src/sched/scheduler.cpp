// Running planned graphs: placement, event-fenced copies and splits, synchronization.
#include "sched/scheduler.h"

#include <cstdlib>
#include <sstream>

#include "backend/device.h"
#include "memory/buffer.h"

namespace strata::sched {

using core::Tensor;

Scheduler::Scheduler(std::vector<backend::Backend*> backends) : backends_(std::move(backends)) {
  for (backend::Backend* b : backends_) {
    allocators_.push_back(std::make_unique<memory::GraphAllocator>(b->device().buffer_type()));
  }
  for (backend::Backend* b : backends_) {
    auto ev = b->device().make_event();
    events_.push_back(ev.ok() ? std::move(ev).value() : nullptr);
  }
  issued_.assign(backends_.size(), 0);
  pending_reads_.assign(backends_.size(), std::vector<uint64_t>(backends_.size(), 0));
  const char* dbg = std::getenv("STRATA_SCHED_DEBUG");
  debug_ = dbg != nullptr && dbg[0] == '1';
}

Scheduler::~Scheduler() {
  (void)synchronize();
}

// The backend whose memory holds `t`'s bytes: -1 when not placed yet. Memory nobody allocated
// (a file mapping) is host memory, which the last backend addresses.
int Scheduler::location(const Tensor& t) const {
  const Tensor* s = core::storage_of(&t);
  if (auto it = assigned_.find(s); it != assigned_.end()) return it->second;
  if (s->data == nullptr) return -1;
  const auto* buf = static_cast<const memory::Buffer*>(s->buffer);
  const int host = static_cast<int>(backends_.size()) - 1;
  if (buf == nullptr || buf->type() == nullptr) return host;
  for (size_t i = 0; i < backends_.size(); ++i) {
    if (&backends_[i]->device().buffer_type() == buf->type()) return static_cast<int>(i);
  }
  return host;
}

Status Scheduler::place(core::Graph& graph, bool reserve_only) {
  // For liveness, each input copy is a node reading its source at the start of its split:
  // the source must stay intact until then, and the copy only needs memory from then on.
  std::unordered_map<const Tensor*, const Split*> split_start;
  for (const Split& sp : splits_) split_start[sp.nodes.front()] = &sp;
  core::Graph augmented;
  augmented.leafs = graph.leafs;
  for (Tensor* n : graph.nodes) {
    if (auto it = split_start.find(n); it != split_start.end()) {
      for (const Split::Input& in : it->second->inputs) {
        in.copy->op = core::Op::kCpy;
        in.copy->src[0] = const_cast<Tensor*>(in.storage);
        augmented.nodes.push_back(in.copy);
      }
    }
    augmented.nodes.push_back(n);
  }
  auto owner = [this](size_t b) {
    return [this, b](const Tensor& t) {
      auto it = assigned_.find(&t);
      return it != assigned_.end() && it->second == static_cast<int>(b);
    };
  };
  if (!reserve_only) {
    // Growing a compute buffer frees the old one, which queued work may still use.
    for (size_t b = 0; b < backends_.size(); ++b) {
      if (allocators_[b]->required(augmented, owner(b)) > allocators_[b]->buffer_size()) {
        STRATA_RETURN_IF_ERROR(synchronize());
        break;
      }
    }
  }
  for (size_t b = 0; b < backends_.size(); ++b) {
    const auto owns = owner(b);
    Status st = reserve_only ? allocators_[b]->reserve(augmented, owns)
                             : allocators_[b]->allocate(augmented, owns);
    if (!st.ok()) return st;  // the buffer type's message names the device
  }
  if (reserve_only) return {};
  for (const Split& sp : splits_) {
    for (const Split::Input& in : sp.inputs) {
      if (in.source == in.storage) continue;
      in.source->data = static_cast<uint8_t*>(in.storage->data) + in.offset;
      in.source->buffer = in.storage->buffer;
    }
  }
  // Views (including re-pointed ones) get their address once every storage is placed.
  for (Tensor* n : graph.nodes) {
    if (n->is_view()) STRATA_RETURN_IF_ERROR(memory::place_view(*n));
    for (Tensor* s : n->src) {
      if (s != nullptr && s->is_view() && s->data == nullptr)
        STRATA_RETURN_IF_ERROR(memory::place_view(*s));
    }
  }
  return {};
}

Status Scheduler::reserve(core::Graph& graph) {
  // Planning re-points sources; reserve works on a throwaway copy of the node list's sources.
  std::vector<std::array<Tensor*, core::kMaxSrc>> saved;
  for (Tensor* n : graph.nodes) saved.push_back(n->src);
  Status st = plan(graph);
  if (st.ok()) st = place(graph, /*reserve_only=*/true);
  for (size_t i = 0; i < graph.nodes.size(); ++i) graph.nodes[i]->src = saved[i];
  splits_.clear();
  return st;
}

Status Scheduler::allocate(core::Graph& graph) {
  graph_ = nullptr;
  STRATA_RETURN_IF_ERROR(plan(graph));
  STRATA_RETURN_IF_ERROR(place(graph, /*reserve_only=*/false));
  // The caller writes inputs next: memory another queue is still copying must be free first.
  for (size_t b = 0; b < backends_.size(); ++b) {
    STRATA_RETURN_IF_ERROR(wait_for_readers(static_cast<int>(b)));
  }
  graph_ = &graph;
  if (debug_) std::fputs(describe().c_str(), stderr);
  return {};
}

backend::Backend& Scheduler::backend_of(const Tensor& t) {
  const int loc = location(t);
  return *backends_[static_cast<size_t>(loc < 0 ? static_cast<int>(backends_.size()) - 1 : loc)];
}

// Queues a signal on `b` after everything queued there so far.
Status Scheduler::signal(int b) {
  auto& ev = events_[static_cast<size_t>(b)];
  if (!ev) return {};
  return backends_[static_cast<size_t>(b)]->signal(*ev, ++issued_[static_cast<size_t>(b)]);
}

// Makes later work on `consumer` wait until everything queued on `producer` has completed.
Status Scheduler::wait_for(int consumer, int producer) {
  if (consumer == producer) return {};
  auto& ev = events_[static_cast<size_t>(producer)];
  if (!ev) return backends_[static_cast<size_t>(producer)]->synchronize();
  return backends_[static_cast<size_t>(consumer)]->wait(*ev,
                                                        issued_[static_cast<size_t>(producer)]);
}

// Makes later work on `b` wait until other queues have finished copying b's memory.
Status Scheduler::wait_for_readers(int b) {
  auto& pending = pending_reads_[static_cast<size_t>(b)];
  for (size_t r = 0; r < pending.size(); ++r) {
    if (pending[r] == 0) continue;
    STRATA_RETURN_IF_ERROR(backends_[static_cast<size_t>(b)]->wait(*events_[r], pending[r]));
    pending[r] = 0;
  }
  return {};
}

Status Scheduler::copy_inputs(const Split& split) {
  const int y = split.backend;
  backend::Backend& dst = *backends_[static_cast<size_t>(y)];
  if (split.inputs.empty()) return {};
  std::vector<int> sources;
  for (const Split::Input& in : split.inputs) {
    const int x = location(*in.storage);
    STRATA_RETURN_IF_ERROR(wait_for(y, x));
    STRATA_RETURN_IF_ERROR(dst.copy_async(*in.copy, *in.source));
    bytes_copied_ += in.bytes;
    sources.push_back(x);
  }
  if (!events_[static_cast<size_t>(y)]) {
    // Without events the copy must be complete before the source can be reused.
    return dst.synchronize();
  }
  STRATA_RETURN_IF_ERROR(signal(y));
  for (int x : sources)
    pending_reads_[static_cast<size_t>(x)][static_cast<size_t>(y)] =
        issued_[static_cast<size_t>(y)];
  return {};
}

Status Scheduler::run_split(const Split& split) {
  const int y = split.backend;
  backend::Backend& b = *backends_[static_cast<size_t>(y)];
  // Copies and compute write y's memory: earlier copies of it by other queues must be done.
  STRATA_RETURN_IF_ERROR(wait_for_readers(y));
  STRATA_RETURN_IF_ERROR(copy_inputs(split));
  if (!eval_) {
    core::Graph g;
    g.nodes = split.nodes;
    STRATA_RETURN_IF_ERROR(b.compute_async(g));
    return signal(y);
  }
  // Observed nodes end a sub-run so their data can be read as soon as they are computed.
  core::Graph g;
  for (Tensor* n : split.nodes) {
    g.nodes.push_back(n);
    if (!eval_(*n, true)) continue;
    STRATA_RETURN_IF_ERROR(b.compute_async(g));
    STRATA_RETURN_IF_ERROR(b.synchronize());
    g.nodes.clear();
    if (!eval_(*n, false)) return error(ErrorCode::kInternal, "run stopped by the eval callback");
  }
  if (!g.nodes.empty()) STRATA_RETURN_IF_ERROR(b.compute_async(g));
  return signal(y);
}

Status Scheduler::compute_async() {
  if (graph_ == nullptr) return error(ErrorCode::kInternal, "scheduler: compute before allocate");
  bytes_copied_ = 0;
  // Inputs the caller queued are covered by a signal before anything reads them.
  for (size_t b = 0; b < backends_.size(); ++b) STRATA_RETURN_IF_ERROR(signal(static_cast<int>(b)));
  for (const Split& split : splits_) {
    Status st = run_split(split);
    if (!st.ok()) {
      (void)synchronize();
      return st;
    }
  }
  return {};
}

Status Scheduler::compute() {
  STRATA_RETURN_IF_ERROR(compute_async());
  return synchronize();
}

Status Scheduler::synchronize() {
  Status first;
  for (backend::Backend* b : backends_) {
    Status st = b->synchronize();
    if (first.ok() && !st.ok()) first = st;
  }
  for (auto& p : pending_reads_) std::fill(p.begin(), p.end(), 0);
  retired_.clear();
  return first;
}

size_t Scheduler::compute_buffer_bytes() const {
  size_t total = 0;
  for (const auto& a : allocators_) total += a->buffer_size();
  return total;
}

std::string Scheduler::describe() const {
  std::ostringstream os;
  os << "sched: " << splits_.size() << " splits\n";
  for (size_t i = 0; i < splits_.size(); ++i) {
    const Split& s = splits_[i];
    os << "  split " << i << " on " << backends_[static_cast<size_t>(s.backend)]->device().name()
       << ": " << s.nodes.size() << " nodes (" << s.nodes.front()->name << " .. "
       << s.nodes.back()->name << ")";
    for (const Split::Input& in : s.inputs) {
      os << (&in == &s.inputs.front() ? "; inputs: " : ", ") << in.storage->name << " [" << in.bytes
         << " B]";
    }
    os << "\n";
  }
  return os.str();
}

}  // namespace strata::sched
