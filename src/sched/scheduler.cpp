// Running planned graphs: placement, event-fenced copies and splits, synchronization.
#include "sched/scheduler.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "backend/device.h"
#include "memory/buffer.h"
#include "sched/plan.h"

namespace strata::sched {

using core::Tensor;

namespace {

// Shapes kept planned at once: a prompt's micro-batches, the decode shape as the cache grows,
// and a few more.
constexpr size_t kCacheSize = 16;

const std::vector<Split> kNoSplits;

}  // namespace

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
int Scheduler::location(const Plan* p, const Tensor& t) const {
  const Tensor* s = core::storage_of(&t);
  if (p != nullptr) {
    if (auto it = p->assigned.find(s); it != p->assigned.end()) return it->second;
  }
  if (s->data == nullptr) return -1;
  const auto* buf = static_cast<const memory::Buffer*>(s->buffer);
  const int host = static_cast<int>(backends_.size()) - 1;
  if (buf == nullptr || buf->type() == nullptr) return host;
  for (size_t i = 0; i < backends_.size(); ++i) {
    if (&backends_[i]->device().buffer_type() == buf->type()) return static_cast<int>(i);
  }
  return host;
}

std::vector<const void*> Scheduler::compute_buffers() const {
  std::vector<const void*> out;
  for (const auto& a : allocators_) {
    if (a->buffer() != nullptr) out.push_back(a->buffer());
  }
  return out;
}

Status Scheduler::place(Plan& p, bool reserve_only) {
  if (!p.placed_at.empty()) {
    // Placed before into a buffer since replaced: everything the allocators gave is stale.
    for (Tensor& t : p.ctx->tensors()) {
      if (std::find(p.caller_placed.begin(), p.caller_placed.end(), &t) != p.caller_placed.end())
        continue;
      t.data = nullptr;
      t.buffer = nullptr;
    }
    p.placed_at.clear();
  }
  // For liveness, each input copy is a node reading its source at the start of its split:
  // the source must stay intact until then, and the copy only needs memory from then on.
  std::unordered_map<const Tensor*, const Split*> split_start;
  for (const Split& sp : p.splits) split_start[sp.nodes.front()] = &sp;
  core::Graph augmented;
  augmented.leafs = p.graph.leafs;
  for (Tensor* n : p.graph.nodes) {
    if (auto it = split_start.find(n); it != split_start.end()) {
      for (const Split::Input& in : it->second->inputs) {
        in.copy->op = core::Op::kCpy;
        in.copy->src[0] = const_cast<Tensor*>(in.storage);
        augmented.nodes.push_back(in.copy);
      }
    }
    augmented.nodes.push_back(n);
  }
  auto owner = [&p](size_t b) {
    return [&p, b](const Tensor& t) {
      auto it = p.assigned.find(&t);
      return it != p.assigned.end() && it->second == static_cast<int>(b);
    };
  };
  if (!reserve_only) {
    // Growing a compute buffer replaces the old one, which queued work may still use.
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
  for (const Split& sp : p.splits) {
    for (const Split::Input& in : sp.inputs) {
      if (in.source == in.storage) continue;
      in.source->data = static_cast<uint8_t*>(in.storage->data) + in.offset;
      in.source->buffer = in.storage->buffer;
    }
  }
  // Views (including re-pointed ones) get their address once every storage is placed.
  for (Tensor* n : p.graph.nodes) {
    if (n->is_view()) STRATA_RETURN_IF_ERROR(memory::place_view(*n));
    for (Tensor* s : n->src) {
      if (s != nullptr && s->is_view() && s->data == nullptr)
        STRATA_RETURN_IF_ERROR(memory::place_view(*s));
    }
  }
  for (const auto& a : allocators_) p.placed_at.push_back(a->generation());
  return {};
}

void Scheduler::retire(std::unique_ptr<Plan> p) {
  if (p.get() == current_) current_ = nullptr;
  retired_.push_back(std::move(p));
}

Status Scheduler::reserve(const core::Graph& graph) {
  auto p = clone_graph(graph, {}, compute_buffers());
  STRATA_RETURN_IF_ERROR(plan(*p));
  STRATA_RETURN_IF_ERROR(place(*p, /*reserve_only=*/true));
  for (const Split& split : p->splits) {
    core::Graph g;
    g.nodes = split.nodes;
    STRATA_RETURN_IF_ERROR(backends_[static_cast<size_t>(split.backend)]->reserve(g));
  }
  return {};
}

Status Scheduler::allocate(const core::Graph& graph) {
  current_ = nullptr;
  aliases_.clear();
  const std::vector<const void*> buffers = compute_buffers();
  GraphSignature sig = signature_of(graph, buffers);
  Plan* p = nullptr;
  for (auto& c : cache_) {
    if (c->signature == sig) p = c.get();
  }
  if (p == nullptr) {
    auto fresh = clone_graph(graph, std::move(sig), buffers);
    STRATA_RETURN_IF_ERROR(plan(*fresh));
    if (cache_.size() >= kCacheSize) {
      auto lru = std::min_element(cache_.begin(), cache_.end(), [](const auto& a, const auto& b) {
        return a->last_used < b->last_used;
      });
      retire(std::move(*lru));
      cache_.erase(lru);
    }
    p = cache_.emplace_back(std::move(fresh)).get();
    ++plans_built_;
  } else {
    ++plans_reused_;
  }
  p->last_used = ++use_clock_;
  bool stale = p->placed_at.size() != allocators_.size();
  for (size_t b = 0; !stale && b < allocators_.size(); ++b)
    stale = p->placed_at[b] != allocators_[b]->generation();
  if (stale) {
    Status st = place(*p, /*reserve_only=*/false);
    if (!st.ok()) {
      // A plan that cannot be placed is not kept: the next try plans afresh.
      auto it =
          std::find_if(cache_.begin(), cache_.end(), [p](const auto& c) { return c.get() == p; });
      retire(std::move(*it));
      cache_.erase(it);
      return st;
    }
  }
  // The caller's tensors get their copies' memory: it writes inputs and reads results there.
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    graph.nodes[i]->data = p->graph.nodes[i]->data;
    graph.nodes[i]->buffer = p->graph.nodes[i]->buffer;
  }
  for (uint32_t i : p->io_leafs) {
    graph.leafs[i]->data = p->graph.leafs[i]->data;
    graph.leafs[i]->buffer = p->graph.leafs[i]->buffer;
    aliases_[graph.leafs[i]] = p->graph.leafs[i];
  }
  for (uint32_t i : p->io_nodes) aliases_[graph.nodes[i]] = p->graph.nodes[i];
  // The caller writes inputs next: memory another queue is still copying must be free first.
  for (size_t b = 0; b < backends_.size(); ++b) {
    STRATA_RETURN_IF_ERROR(wait_for_readers(static_cast<int>(b)));
  }
  current_ = p;
  if (debug_) std::fputs(describe().c_str(), stderr);
  return {};
}

backend::Backend& Scheduler::backend_of(const Tensor& t) {
  const Tensor* target = &t;
  if (auto it = aliases_.find(&t); it != aliases_.end()) target = it->second;
  const int loc = location(current_, *target);
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
    const int x = location(current_, *in.storage);
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
  // Observed nodes end a sub-run so their data can be read as soon as they are computed; a
  // later sub-run may read any node of an earlier one, so every node counts as shared.
  for (Tensor* n : split.nodes) n->flags |= core::kFlagShared;
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
  if (current_ == nullptr) return error(ErrorCode::kInternal, "scheduler: compute before allocate");
  bytes_copied_ = 0;
  // Inputs the caller queued are covered by a signal before anything reads them.
  for (size_t b = 0; b < backends_.size(); ++b) STRATA_RETURN_IF_ERROR(signal(static_cast<int>(b)));
  for (const Split& split : current_->splits) {
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

const std::vector<Split>& Scheduler::splits() const {
  return current_ != nullptr ? current_->splits : kNoSplits;
}

std::string Scheduler::describe() const {
  const std::vector<Split>& all = splits();
  std::ostringstream os;
  os << "sched: " << all.size() << " splits\n";
  for (size_t i = 0; i < all.size(); ++i) {
    const Split& s = all[i];
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
