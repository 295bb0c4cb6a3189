#include "meta/meta_backend.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>

#include "core/types.h"
#include "meta/expansion.h"
#include "meta/meta_device.h"

namespace strata::meta {
namespace {

// Graph shapes kept expanded at once (the scheduler keeps as many plans).
constexpr size_t kCacheSize = 16;

}  // namespace

Result<std::unique_ptr<MetaBackend>> MetaBackend::create(MetaDevice& device,
                                                         const backend::BackendOptions& options) {
  std::unique_ptr<MetaBackend> b(new MetaBackend(device));
  for (backend::Device* m : device.members()) {
    auto be = m->make_backend(options);
    if (!be.ok()) return be.status();
    b->members_.push_back(std::move(be).value());
    auto ev = m->make_event();
    if (!ev.ok()) return ev.status();
    b->events_.push_back(std::move(ev).value());
    b->allocators_.push_back(std::make_unique<memory::GraphAllocator>(m->buffer_type()));
  }
  b->issued_.assign(b->members_.size(), 0);
  b->busy_.assign(b->members_.size(), false);
  b->reported_.assign(b->members_.size(), 0);
  const char* dbg = std::getenv("STRATA_SCHED_DEBUG");
  b->debug_ = dbg != nullptr && dbg[0] == '1';
  return b;
}

MetaBackend::~MetaBackend() {
  (void)synchronize();
  for (size_t d = 0; d < reported_.size(); ++d) {
    device_->add_compute_bytes(static_cast<int>(d), -static_cast<long long>(reported_[d]));
  }
}

backend::Device& MetaBackend::device() {
  return *device_;
}

void MetaBackend::report_compute_bytes() {
  for (size_t d = 0; d < allocators_.size(); ++d) {
    const size_t now = allocators_[d]->buffer_size();
    device_->add_compute_bytes(static_cast<int>(d),
                               static_cast<long long>(now) - static_cast<long long>(reported_[d]));
    reported_[d] = now;
  }
}

Status MetaBackend::reserve(const core::Graph& graph) {
  auto x = expand(graph, *device_);
  if (!x.ok()) return x.status();
  for (size_t d = 0; d < members_.size(); ++d) {
    const MemberWork& w = (*x)->members[d];
    STRATA_RETURN_IF_ERROR(allocators_[d]->reserve(
        w.alloc, [&w](const core::Tensor& t) { return w.owned.count(&t) != 0; }));
  }
  report_compute_bytes();
  return {};
}

Status MetaBackend::place(Expansion& x) {
  bool stale = false;
  for (size_t d = 0; d < members_.size(); ++d) {
    stale = stale || x.members[d].placed_at != allocators_[d]->generation();
  }
  if (!stale) return {};
  for (size_t d = 0; d < members_.size(); ++d) {
    const MemberWork& w = x.members[d];
    auto owns = [&w](const core::Tensor& t) { return w.owned.count(&t) != 0; };
    if (allocators_[d]->required(w.alloc, owns) > allocators_[d]->buffer_size()) {
      // Growing replaces the buffer, which queued work may still use.
      STRATA_RETURN_IF_ERROR(synchronize());
      break;
    }
  }
  for (size_t d = 0; d < members_.size(); ++d) {
    MemberWork& w = x.members[d];
    for (core::Tensor& t : w.ctx->tensors()) {
      t.data = nullptr;
      t.buffer = nullptr;
    }
    STRATA_RETURN_IF_ERROR(allocators_[d]->allocate(
        w.alloc, [&w](const core::Tensor& t) { return w.owned.count(&t) != 0; }));
  }
  // Views of other members' tensors (an all-reduce reads every partial) once all are placed.
  for (size_t d = 0; d < members_.size(); ++d) {
    for (core::Tensor* t : x.members[d].alloc.nodes) {
      if (t->is_view() && t->data == nullptr) STRATA_RETURN_IF_ERROR(memory::place_view(*t));
    }
    x.members[d].placed_at = allocators_[d]->generation();
  }
  report_compute_bytes();
  return {};
}

// Every member's later work starts after all work queued on the others so far.
Status MetaBackend::barrier() {
  const size_t n = members_.size();
  for (size_t d = 0; d < n; ++d) {
    if (busy_[d]) STRATA_RETURN_IF_ERROR(members_[d]->signal(*events_[d], ++issued_[d]));
  }
  for (size_t d = 0; d < n; ++d) {
    for (size_t e = 0; e < n; ++e) {
      if (e != d && busy_[e]) STRATA_RETURN_IF_ERROR(members_[d]->wait(*events_[e], issued_[e]));
    }
  }
  std::fill(busy_.begin(), busy_.end(), false);
  return {};
}

// Member 0's later work starts after all work queued on the others so far.
Status MetaBackend::join_first() {
  for (size_t e = 1; e < members_.size(); ++e) {
    if (!busy_[e]) continue;
    STRATA_RETURN_IF_ERROR(members_[e]->signal(*events_[e], ++issued_[e]));
    STRATA_RETURN_IF_ERROR(members_[0]->wait(*events_[e], issued_[e]));
    busy_[e] = false;
  }
  busy_[0] = true;
  return {};
}

Status MetaBackend::compute_async(const core::Graph& graph) {
  std::vector<uint64_t> key = expansion_key(graph);
  Expansion* x = nullptr;
  for (auto& c : cache_) {
    if (c->key == key) x = c.get();
  }
  if (x == nullptr) {
    auto fresh = expand(graph, *device_);
    if (!fresh.ok()) return fresh.status();
    (*fresh)->key = std::move(key);
    if (debug_ && !(*fresh)->log.empty()) std::fputs((*fresh)->log.c_str(), stderr);
    if (cache_.size() >= kCacheSize) {
      auto lru = std::min_element(cache_.begin(), cache_.end(), [](const auto& a, const auto& b) {
        return a->last_used < b->last_used;
      });
      retired_.push_back(std::move(*lru));
      cache_.erase(lru);
    }
    x = cache_.emplace_back(std::move(fresh).value()).get();
  }
  x->last_used = ++clock_;
  STRATA_RETURN_IF_ERROR(place(*x));
  STRATA_RETURN_IF_ERROR(barrier());
  const std::vector<uint64_t> base = issued_;
  // Signals of each member queued so far; a run that fails part way counts only those.
  std::vector<uint32_t> queued(members_.size(), 0);
  const Status st =
      out_of_memory_as_error("tensor split", [&] { return queue_steps(*x, base, queued); });
  for (size_t d = 0; d < members_.size(); ++d) {
    issued_[d] = base[d] + queued[d];
    busy_[d] = true;
  }
  return st;
}

// Members are queued in turn, each up to a wait for a signal not queued yet, so everything
// queued is a closed prefix of the run: a run that fails part way leaves no member waiting
// for a signal that will never come, and no step computing from inputs nobody produced. (The
// expansion emits every signal before the waits on it, so each round makes progress.)
Status MetaBackend::queue_steps(const Expansion& x, const std::vector<uint64_t>& base,
                                std::vector<uint32_t>& queued) {
  const size_t n = members_.size();
  std::vector<size_t> next(n, 0);
  for (;;) {
    bool progress = false, done = true;
    for (size_t d = 0; d < n; ++d) {
      backend::Backend& b = *members_[d];
      const std::vector<Step>& steps = x.members[d].steps;
      for (; next[d] < steps.size(); ++next[d], progress = true) {
        const Step& s = steps[next[d]];
        if (s.kind == Step::Kind::kCompute) {
          STRATA_RETURN_IF_ERROR(b.compute_async(s.graph));
        } else if (s.kind == Step::Kind::kCopy) {
          STRATA_RETURN_IF_ERROR(b.copy_async(*s.dst, *s.src));
        } else if (s.kind == Step::Kind::kAllReduce) {
          STRATA_RETURN_IF_ERROR(
              b.all_reduce_async(*device_->collective(), static_cast<int>(d), *s.src, *s.dst));
        } else if (s.kind == Step::Kind::kCopyOut) {
          STRATA_RETURN_IF_ERROR(copy_out(b, s));
        } else if (s.kind == Step::Kind::kSignal) {
          STRATA_RETURN_IF_ERROR(b.signal(*events_[d], base[d] + s.index));
          queued[d] = s.index;
        } else {
          const auto e = static_cast<size_t>(s.other);
          if (s.index > queued[e]) break;
          STRATA_RETURN_IF_ERROR(b.wait(*events_[e], base[e] + s.index));
        }
      }
      done = done && next[d] == steps.size();
    }
    if (done) return {};
    if (!progress) {
      return error(ErrorCode::kInternal, "tensor split: a member waits for a signal never queued");
    }
  }
}

// The destination's rows (runs of dense bytes) are read from the contiguous source in order.
Status MetaBackend::copy_out(backend::Backend& b, const Step& s) {
  const core::Tensor& src = *s.src;
  size_t run = core::row_size(src.type, s.ne[0]);
  size_t dense = 1;  // dimensions [0, dense) form one run in the destination
  if (s.nb[0] != core::type_size(src.type)) dense = 0;
  while (dense > 0 && dense < core::kMaxDims && s.nb[dense] == run) {
    run *= static_cast<size_t>(s.ne[dense]);
    ++dense;
  }
  if (dense == 0) {
    return error(ErrorCode::kUnsupported, "tensor split: cannot copy '" + src.name +
                                              "' out to a destination without dense rows");
  }
  auto* base = static_cast<uint8_t*>(s.dst->data) + s.offset;
  size_t from = 0;
  std::array<int64_t, core::kMaxDims> i{};
  for (;;) {
    size_t at = 0;
    for (size_t k = dense; k < core::kMaxDims; ++k) at += static_cast<size_t>(i[k]) * s.nb[k];
    STRATA_RETURN_IF_ERROR(b.get_async(src, base + at, from, run));
    from += run;
    size_t k = dense;
    for (; k < core::kMaxDims; ++k) {
      if (++i[k] < s.ne[k]) break;
      i[k] = 0;
    }
    if (k == core::kMaxDims) return {};
  }
}

Status MetaBackend::set_async(core::Tensor& t, const void* src, size_t offset, size_t size) {
  STRATA_RETURN_IF_ERROR(join_first());
  return members_[0]->set_async(t, src, offset, size);
}

Status MetaBackend::get_async(const core::Tensor& t, void* dst, size_t offset, size_t size) {
  STRATA_RETURN_IF_ERROR(join_first());
  return members_[0]->get_async(t, dst, offset, size);
}

Status MetaBackend::copy_async(core::Tensor& dst, const core::Tensor& src) {
  STRATA_RETURN_IF_ERROR(join_first());
  return members_[0]->copy_async(dst, src);
}

Status MetaBackend::signal(backend::Event& event, uint64_t value) {
  if (&event.device() != device_) {
    return error(ErrorCode::kInvalidArgument,
                 std::string(device_->name()) + ": cannot signal an event of " +
                     std::string(event.device().name()) + " (signal it on its own device)");
  }
  STRATA_RETURN_IF_ERROR(join_first());
  return members_[0]->signal(event, value);
}

Status MetaBackend::wait(backend::Event& event, uint64_t value) {
  for (auto& m : members_) STRATA_RETURN_IF_ERROR(m->wait(event, value));
  return {};
}

Status MetaBackend::synchronize() {
  Status first;
  for (auto& m : members_) {
    Status st = m->synchronize();
    if (first.ok() && !st.ok()) first = st;
  }
  std::fill(busy_.begin(), busy_.end(), false);
  retired_.clear();
  return first;
}

}  // namespace strata::meta
