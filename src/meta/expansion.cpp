// Expanding a graph over a meta device's members: every tensor gets a split state, op by op.
//
//   mirrored  every member has the whole tensor: its own copy, or (whole) the graph's own
//             tensor in host memory, which every member reads
//   split     member d has pieces[d] along one axis
//   partial   every member has a tensor of the full shape; the value is their sum
//
// Weights and the KV cache get their state from how they were placed (Sharded); inputs and
// tensors computed elsewhere are whole. Each op has a rule that maps its sources' states to
// its own and builds one shard node per member; a partial becomes mirrored through an
// all-reduce. Where no rule fits, the sources are made whole and every member computes the
// node whole: slower, never wrong. Nodes something outside reads are made whole after they are
// computed.
//
// Members only read each other's memory in an all-reduce (every chunk of the sum is added in
// member order, so their copies are identical) and through whole tensors. Each such read is
// fenced by events (a wait on the writer's signal), and memory others may still read is kept
// from reuse until the owner has waited for them (a phantom reader in its allocation order).
#include "meta/expansion.h"

#include <algorithm>
#include <functional>

#include "memory/buffer.h"
#include "meta/expansion_builder.h"

namespace strata::meta {
namespace detail {

// Partial sums at least this large are all-reduced in two rounds over three or more members.
constexpr size_t kScatterBytes = 64 * 1024;

Builder::Builder(const MetaDevice& dev, Expansion& x) : dev_(dev), x_(x), n_(dev.size()) {
  x_.members.resize(static_cast<size_t>(n_));
  pending_.resize(static_cast<size_t>(n_));
  seen_.assign(static_cast<size_t>(n_), std::vector<uint32_t>(static_cast<size_t>(n_), 0));
  dirty_.assign(static_cast<size_t>(n_), false);
  held_.resize(static_cast<size_t>(n_));
  copies_.resize(static_cast<size_t>(n_));
  for (backend::Device* m : dev.members()) host_.push_back(m->caps().host_buffers);
}

Status Builder::run(const core::Graph& g) {
  for (Tensor* n : g.nodes) {
    if (!computes(*n)) continue;
    if (!apply(n)) fallback(n);
    if (n->has_flag(core::kFlagOutput) || n->has_flag(core::kFlagShared)) {
      materialize(const_cast<Tensor*>(core::storage_of(n)));
    }
  }
  for (int d = 0; d < n_; ++d) {
    release(d);
    flush(d);
  }
  for (int d = 0; d < n_; ++d) {
    if (!ctx(d).ok()) return ctx(d).status().with_context("meta: expanding the graph");
  }
  return {};
}

Tensor* Builder::track(int d, Tensor* t) {
  work(d).alloc.nodes.push_back(t);
  work(d).owned.insert(t);
  return t;
}

void Builder::emit(int d, Tensor* t) {
  track(d, t);
  pending_[static_cast<size_t>(d)].push_back(t);
  dirty_[static_cast<size_t>(d)] = true;
}

void Builder::flush(int d) {
  auto& p = pending_[static_cast<size_t>(d)];
  if (p.empty()) return;
  Step s;
  s.kind = Step::Kind::kCompute;
  s.graph.nodes = std::move(p);
  work(d).steps.push_back(std::move(s));
  p.clear();
}

void Builder::need(int d, int e) {
  if (d == e) return;
  MemberWork& we = work(e);
  if (dirty_[static_cast<size_t>(e)]) {
    flush(e);
    we.steps.push_back({Step::Kind::kSignal, {}, -1, ++we.signals});
    dirty_[static_cast<size_t>(e)] = false;
  }
  uint32_t& seen = seen_[static_cast<size_t>(d)][static_cast<size_t>(e)];
  if (we.signals == 0 || seen >= we.signals) return;
  flush(d);
  work(d).steps.push_back({Step::Kind::kWait, {}, e, we.signals});
  seen = we.signals;
}

void Builder::need_all(int d) {
  for (int e = 0; e < n_; ++e) need(d, e);
  release(d);
}

void Builder::release(int d) {
  for (Tensor* t : held_[static_cast<size_t>(d)]) {
    track(d, core::view(ctx(d), t, t->ne, t->nb, 0));
  }
  held_[static_cast<size_t>(d)].clear();
}

void Builder::need_writers(int d, const Tensor* storage) {
  auto it = writers_.find(storage);
  if (it == writers_.end()) return;
  for (int w : it->second) need(d, w);
}

void Builder::step(int d, Step s) {
  flush(d);
  work(d).steps.push_back(std::move(s));
  dirty_[static_cast<size_t>(d)] = true;
}

bool Builder::reaches(int d, const Tensor* t) const {
  const Tensor* storage = core::storage_of(t);
  for (int e = 0; e < n_; ++e) {
    if (x_.members[static_cast<size_t>(e)].owned.count(storage) != 0) {
      return e == d || (host_[static_cast<size_t>(d)] && host_[static_cast<size_t>(e)]);
    }
  }
  const auto* buffer = static_cast<const memory::Buffer*>(storage->buffer);
  if (host_[static_cast<size_t>(d)]) return buffer == nullptr || buffer->is_host();
  return buffer != nullptr &&
         buffer->type() == &dev_.members()[static_cast<size_t>(d)]->buffer_type();
}

Tensor* Builder::reachable(int d, Tensor* t) {
  if (reaches(d, t)) return t;
  auto* storage = const_cast<Tensor*>(core::storage_of(t));
  Tensor*& copy = copies_[static_cast<size_t>(d)][storage];
  if (copy == nullptr) {
    copy = track(d, ctx(d).new_tensor(storage->type, storage->ne, storage->name + "#copy"));
    Step s;
    s.kind = Step::Kind::kCopy;
    s.dst = copy;
    s.src = storage;
    step(d, std::move(s));
  }
  if (t == storage) return copy;
  // The same view of the copy (views may read their storage's bytes as another type).
  Tensor* v = ctx(d).new_tensor(t->type, t->ne, t->name + "#copy");
  v->op = Op::kView;
  v->nb = t->nb;
  v->src[0] = copy;
  v->view_src = copy;
  for (const Tensor* u = t; u->view_src != nullptr; u = u->view_src)
    v->view_offset += u->view_offset;
  return track(d, v);
}

Dist Builder::whole(Tensor* t) const {
  Dist x;
  x.whole = true;
  x.shard.assign(static_cast<size_t>(n_), t);
  return x;
}

Tensor* Builder::use(const Dist& x, int d) {
  Tensor* t = x.shard[static_cast<size_t>(d)];
  if (!x.whole) return t;
  need_writers(d, core::storage_of(t));
  return reachable(d, t);
}

Dist& Builder::of(Tensor* s) {
  if (auto it = dist_.find(s); it != dist_.end()) return it->second;
  Dist x;
  if (core::is_view_op(s->op)) {
    Dist base = of(s->src[0]);
    std::optional<Dist> mapped = map_view(s, base);
    if (mapped) {
      x = std::move(*mapped);
    } else {
      materialize(const_cast<Tensor*>(core::storage_of(s)));
      x = whole(s);
    }
  } else if (const Sharded* sh = dev_.find(s)) {
    x.kind = sh->axis < 0 ? Kind::kMirrored : Kind::kSplit;
    x.axis = sh->axis;
    x.pieces = sh->pieces;
    x.shard = sh->shard;
  } else {
    x = whole(s);
  }
  return dist_.insert_or_assign(s, std::move(x)).first->second;
}

void Builder::write_into(int d, Tensor* t, const core::Shape& ne, const core::Strides& nb,
                         size_t offset, Tensor* src) {
  if (!reaches(d, t)) {
    // Computed into the member's own memory, then copied out row by row.
    Tensor* c = ctx(d).new_tensor(t->type, ne, t->name + "#whole");
    c->op = Op::kCpy;
    c->src[0] = src;
    emit(d, c);
    Step s;
    s.kind = Step::Kind::kCopyOut;
    s.dst = t;
    s.src = c;
    s.offset = offset;
    s.ne = ne;
    s.nb = nb;
    step(d, std::move(s));
    return;
  }
  Tensor* c = ctx(d).new_tensor(t->type, ne, t->name + "#whole");
  c->op = Op::kCpy;
  c->nb = nb;
  c->src[0] = src;
  c->view_src = t;
  c->view_offset = offset;
  emit(d, c);
}

void Builder::materialize(Tensor* t) {
  if (written_.count(t) != 0) return;
  if (of(t).whole) return;
  if (of(t).kind == Kind::kPartial) reduce(t);
  const Dist& x = of(t);
  if (x.whole) return;
  std::vector<int>& w = writers_[t];
  w.clear();
  if (x.kind == Kind::kMirrored) {
    need_all(0);
    write_into(0, t, t->ne, t->nb, 0, x.shard[0]);
    w.push_back(0);
  } else {
    const int a = x.axis;
    for (int d = 0; d < n_; ++d) {
      need_all(d);
      Tensor* shard = x.shard[static_cast<size_t>(d)];
      int64_t pos = 0;
      for (const Range& r : x.pieces[static_cast<size_t>(d)]) {
        core::Shape ne = t->ne;
        ne[static_cast<size_t>(a)] = r.size();
        Tensor* part =
            track(d, core::view(ctx(d), shard, ne, shard->nb, axis_bytes(*shard, a, pos)));
        write_into(d, t, ne, t->nb, axis_bytes(*t, a, r.lo), part);
        pos += r.size();
      }
      w.push_back(d);
    }
  }
  written_.insert(t);
  for (auto& copies : copies_) copies.erase(t);
  x_.log += "meta: " + t->name + " " + shape_text(*t) + " made whole\n";
}

void Builder::reduce(Tensor* t) {
  Dist& x = of(t);
  if (dev_.collective() != nullptr && t->type == core::Type::kF32 &&
      std::all_of(x.shard.begin(), x.shard.end(),
                  [](const Tensor* p) { return p->is_contiguous(); })) {
    reduce_collective(t, x);
    return;
  }
  const bool shared = std::all_of(host_.begin(), host_.end(), [](bool h) { return h; });
  if (shared && n_ >= 3 && t->nbytes() >= kScatterBytes && t->type == core::Type::kF32 &&
      std::all_of(x.shard.begin(), x.shard.end(),
                  [](const Tensor* p) { return p->is_contiguous(); })) {
    reduce_scatter_gather(t, x);
    return;
  }
  for (int d = 0; d < n_; ++d) need_all(d);
  std::vector<Tensor*> sums(static_cast<size_t>(n_));
  for (int d = 0; d < n_; ++d) {
    Tensor* acc = nullptr;
    for (int e = 0; e < n_; ++e) {
      Tensor* p = x.shard[static_cast<size_t>(e)];
      // Read through a view, so the sum never overwrites a partial in place; a partial the
      // member cannot address is copied over first.
      Tensor* pv =
          reaches(d, p) ? track(d, core::view(ctx(d), p, p->ne, p->nb, 0)) : reachable(d, p);
      if (acc == nullptr) {
        acc = pv;
        continue;
      }
      acc = core::add(ctx(d), acc, pv);
      acc->name = t->name + "#sum";
      emit(d, acc);
    }
    sums[static_cast<size_t>(d)] = acc;
    held_[static_cast<size_t>(d)].push_back(
        const_cast<Tensor*>(core::storage_of(x.shard[static_cast<size_t>(d)])));
  }
  x_.log += "meta: all-reduce " + t->name + " " + shape_text(*t) + " over " + std::to_string(n_) +
            " devices\n";
  Dist m;
  m.shard = std::move(sums);
  dist_.insert_or_assign(t, std::move(m));
}

void Builder::reduce_collective(Tensor* t, Dist& x) {
  std::vector<Tensor*> sums(static_cast<size_t>(n_));
  for (int d = 0; d < n_; ++d) {
    Tensor* partial = x.shard[static_cast<size_t>(d)];
    Tensor* sum = track(d, ctx(d).new_tensor(t->type, t->ne, t->name + "#sum"));
    Step s;
    s.kind = Step::Kind::kAllReduce;
    s.src = partial;
    s.dst = sum;
    step(d, std::move(s));
    // The step reads the partial: its memory stays allocated up to here.
    track(d, core::view(ctx(d), partial, partial->ne, partial->nb, 0));
    sums[static_cast<size_t>(d)] = sum;
  }
  x_.log += "meta: all-reduce " + t->name + " " + shape_text(*t) + " over " + std::to_string(n_) +
            " devices (collective)\n";
  Dist m;
  m.shard = std::move(sums);
  dist_.insert_or_assign(t, std::move(m));
}

Tensor* Builder::flat(int d, Tensor* p, int64_t lo, int64_t hi) {
  const auto len = hi - lo;
  return track(
      d, core::view(ctx(d), p, {len, 1, 1, 1},
                    {sizeof(float), len * sizeof(float), len * sizeof(float), len * sizeof(float)},
                    static_cast<size_t>(lo) * sizeof(float)));
}

void Builder::reduce_scatter_gather(Tensor* t, Dist& x) {
  const int64_t n = t->nelements();
  std::vector<int64_t> bound(static_cast<size_t>(n_) + 1);
  for (int d = 0; d <= n_; ++d) bound[static_cast<size_t>(d)] = n * d / n_ / 16 * 16;
  bound[static_cast<size_t>(n_)] = n;
  for (int d = 0; d < n_; ++d) need_all(d);
  std::vector<Tensor*> sums(static_cast<size_t>(n_));
  for (int d = 0; d < n_; ++d) {
    const int64_t lo = bound[static_cast<size_t>(d)], hi = bound[static_cast<size_t>(d) + 1];
    // The member's whole sum: memory only, filled by its chunk here and the copies below.
    Tensor* sum = track(d, ctx(d).new_tensor(t->type, t->ne, t->name + "#sum"));
    sums[static_cast<size_t>(d)] = sum;
    Tensor* acc = flat(d, x.shard[0], lo, hi);
    for (int e = 1; e < n_; ++e) {
      acc = core::add(ctx(d), acc, flat(d, x.shard[static_cast<size_t>(e)], lo, hi));
      acc->name = t->name + "#chunk";
      if (e == n_ - 1) {
        acc->view_src = sum;
        acc->view_offset = static_cast<size_t>(lo) * sizeof(float);
      }
      emit(d, acc);
    }
    held_[static_cast<size_t>(d)].push_back(
        const_cast<Tensor*>(core::storage_of(x.shard[static_cast<size_t>(d)])));
  }
  for (int d = 0; d < n_; ++d) need_all(d);
  for (int d = 0; d < n_; ++d) {
    for (int e = 0; e < n_; ++e) {
      if (e == d) continue;
      const int64_t lo = bound[static_cast<size_t>(e)], hi = bound[static_cast<size_t>(e) + 1];
      Tensor* c = ctx(d).new_tensor(t->type, {hi - lo, 1, 1, 1}, t->name + "#gather");
      c->op = Op::kCpy;
      c->src[0] = flat(d, sums[static_cast<size_t>(e)], lo, hi);
      c->view_src = sums[static_cast<size_t>(d)];
      c->view_offset = static_cast<size_t>(lo) * sizeof(float);
      emit(d, c);
    }
    // The others copy from this member's sum until its next wait for them.
    held_[static_cast<size_t>(d)].push_back(sums[static_cast<size_t>(d)]);
  }
  x_.log += "meta: all-reduce " + t->name + " " + shape_text(*t) + " over " + std::to_string(n_) +
            " devices (reduce-scatter, all-gather)\n";
  Dist m;
  m.shard = std::move(sums);
  dist_.insert_or_assign(t, std::move(m));
}

}  // namespace detail

std::vector<uint64_t> expansion_key(const core::Graph& g) {
  std::vector<uint64_t> k;
  k.reserve(g.nodes.size() * 32);
  auto put = [&k](const core::Tensor* t) {
    k.push_back(reinterpret_cast<uintptr_t>(t));
    k.push_back(reinterpret_cast<uintptr_t>(t->data));
    k.push_back(static_cast<uint64_t>(t->op) | static_cast<uint64_t>(t->flags) << 8 |
                static_cast<uint64_t>(t->type) << 40);
    for (size_t i = 0; i < core::kMaxDims; ++i) {
      k.push_back(static_cast<uint64_t>(t->ne[i]));
      k.push_back(t->nb[i]);
    }
    k.push_back(t->view_offset);
  };
  for (const core::Tensor* n : g.nodes) {
    put(n);
    k.push_back(std::hash<std::string>{}(n->name));
    for (const core::Tensor* s : n->src) {
      if (s != nullptr) put(s);
    }
  }
  return k;
}

Result<std::unique_ptr<Expansion>> expand(const core::Graph& g, const MetaDevice& device) {
  auto x = std::make_unique<Expansion>();
  detail::Builder b(device, *x);
  STRATA_RETURN_IF_ERROR(b.run(g));
  return x;
}

}  // namespace strata::meta
