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
// all-reduce. Where no rule fits, the sources are made whole and member 0 computes the node
// whole: slower, never wrong. Nodes something outside reads are made whole after they are
// computed.
//
// Members only read each other's memory in an all-reduce (every chunk of the sum is added in
// member order, so their copies are identical) and through whole tensors. Each such read is
// fenced by events (a wait on the writer's signal), and memory others may still read is kept
// from reuse until the owner has waited for them (a phantom reader in its allocation order).
#include "meta/expansion.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <unordered_map>

#include "core/ops.h"
#include "meta/meta_device.h"

namespace strata::meta {
namespace {

using core::Op;
using core::Tensor;

// Partial sums at least this large are all-reduced in two rounds over three or more members.
constexpr size_t kScatterBytes = 64 * 1024;

enum class Kind : uint8_t { kMirrored, kSplit, kPartial };

struct Dist {
  Kind kind = Kind::kMirrored;
  int axis = -1;
  std::vector<Pieces> pieces;
  std::vector<Tensor*> shard;
  bool whole = false;  ///< mirrored by being the graph's own tensor (shard[d] is it)
};

bool computes(const Tensor& t) {
  return t.op != Op::kNone && !core::is_view_op(t.op);
}

size_t offset_of(const Tensor* t) {
  return t->is_view() ? t->view_offset : 0;
}

// Byte offset of element i along axis a of t.
size_t axis_bytes(const Tensor& t, int a, int64_t i) {
  if (a == 0) return core::row_size(t.type, i);
  return static_cast<size_t>(i) * t.nb[static_cast<size_t>(a)];
}

bool single_pieces(const std::vector<Pieces>& p) {
  for (const Pieces& x : p) {
    if (x.size() != 1) return false;
  }
  return true;
}

std::vector<Pieces> scale_pieces(const std::vector<Pieces>& p, int64_t mul, int64_t div) {
  std::vector<Pieces> out = p;
  for (Pieces& x : out) {
    for (Range& r : x) r = {r.lo * mul / div, r.hi * mul / div};
  }
  return out;
}

bool divides_pieces(const std::vector<Pieces>& p, int64_t by) {
  for (const Pieces& x : p) {
    for (const Range& r : x) {
      if (r.lo % by != 0 || r.hi % by != 0) return false;
    }
  }
  return true;
}

std::string shape_text(const Tensor& t) {
  std::string s = "[";
  for (size_t i = 0; i < core::kMaxDims; ++i) s += (i ? "," : "") + std::to_string(t.ne[i]);
  return s + "]";
}

class Builder {
 public:
  Builder(const MetaDevice& dev, Expansion& x) : dev_(dev), x_(x), n_(dev.size()) {
    x_.members.resize(static_cast<size_t>(n_));
    pending_.resize(static_cast<size_t>(n_));
    seen_.assign(static_cast<size_t>(n_), std::vector<uint32_t>(static_cast<size_t>(n_), 0));
    dirty_.assign(static_cast<size_t>(n_), false);
    held_.resize(static_cast<size_t>(n_));
  }

  Status run(const core::Graph& g) {
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

 private:
  core::Context& ctx(int d) { return *x_.members[static_cast<size_t>(d)].ctx; }
  MemberWork& work(int d) { return x_.members[static_cast<size_t>(d)]; }

  // --- Work and fences -------------------------------------------------------------------

  Tensor* track(int d, Tensor* t) {
    work(d).alloc.nodes.push_back(t);
    work(d).owned.insert(t);
    return t;
  }
  void emit(int d, Tensor* t) {
    track(d, t);
    pending_[static_cast<size_t>(d)].push_back(t);
    dirty_[static_cast<size_t>(d)] = true;
  }
  void flush(int d) {
    auto& p = pending_[static_cast<size_t>(d)];
    if (p.empty()) return;
    Step s;
    s.kind = Step::Kind::kCompute;
    s.graph.nodes = std::move(p);
    work(d).steps.push_back(std::move(s));
    p.clear();
  }
  // Member d's later work starts after everything member e was given so far.
  void need(int d, int e) {
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
  // Member d waits for every other member; memory of d's that they were reading is free then.
  void need_all(int d) {
    for (int e = 0; e < n_; ++e) need(d, e);
    release(d);
  }
  void release(int d) {
    for (Tensor* t : held_[static_cast<size_t>(d)]) {
      track(d, core::view(ctx(d), t, t->ne, t->nb, 0));
    }
    held_[static_cast<size_t>(d)].clear();
  }
  void need_writers(int d, const Tensor* storage) {
    auto it = writers_.find(storage);
    if (it == writers_.end()) return;
    for (int w : it->second) need(d, w);
  }

  // --- States ------------------------------------------------------------------------------

  Dist whole(Tensor* t) const {
    Dist x;
    x.whole = true;
    x.shard.assign(static_cast<size_t>(n_), t);
    return x;
  }
  // Member d's tensor for `x`, once what it reads has been written.
  Tensor* use(const Dist& x, int d) {
    Tensor* t = x.shard[static_cast<size_t>(d)];
    if (x.whole) need_writers(d, core::storage_of(t));
    return t;
  }
  Dist& of(Tensor* s) {
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

  // --- Views -------------------------------------------------------------------------------

  // The view `v` takes of its source, taken of member d's tensor `b` laid out like it.
  Tensor* same_view(int d, const Tensor* v, Tensor* b) {
    Tensor* t = nullptr;
    switch (v->op) {
      case Op::kReshape:
        t = core::reshape(ctx(d), b, v->ne);
        break;
      case Op::kPermute: {
        const auto& p = std::get<core::PermuteParams>(v->params);
        t = core::permute(ctx(d), b, {p.axes[0], p.axes[1], p.axes[2], p.axes[3]});
        break;
      }
      case Op::kTranspose:
        t = core::transpose(ctx(d), b);
        break;
      default:
        t = core::view(ctx(d), b, v->ne, v->nb, v->view_offset - offset_of(v->src[0]));
        break;
    }
    return track(d, t);
  }

  std::optional<Dist> map_view(const Tensor* v, const Dist& base) {
    if (base.whole) return whole(const_cast<Tensor*>(v));
    Dist out;
    out.kind = base.kind;
    out.shard.resize(static_cast<size_t>(n_));
    if (base.kind != Kind::kSplit) {
      for (int d = 0; d < n_; ++d)
        out.shard[static_cast<size_t>(d)] = same_view(d, v, base.shard[static_cast<size_t>(d)]);
      return out;
    }
    switch (v->op) {
      case Op::kReshape:
        return map_reshape(v, base);
      case Op::kPermute:
      case Op::kTranspose: {
        int a = base.axis;
        if (v->op == Op::kTranspose) {
          a = a == 0 ? 1 : a == 1 ? 0 : a;
        } else {
          a = std::get<core::PermuteParams>(v->params).axes[static_cast<size_t>(a)];
        }
        out.axis = a;
        out.pieces = base.pieces;
        for (int d = 0; d < n_; ++d)
          out.shard[static_cast<size_t>(d)] = same_view(d, v, base.shard[static_cast<size_t>(d)]);
        return out;
      }
      default:
        return map_strided_view(v, base);
    }
  }

  // A reshape keeps a split when the split axis's blocks survive it: the run of elements the
  // axis and those below it span stays one run of the new shape.
  std::optional<Dist> map_reshape(const Tensor* v, const Dist& base) {
    const Tensor* bt = v->src[0];
    const auto a = static_cast<size_t>(base.axis);
    int64_t inner = 1;
    for (size_t k = 0; k < a; ++k) inner *= bt->ne[k];
    const int64_t run = inner * bt->ne[a];
    int64_t prefix = 1;
    for (size_t b = 0; b < core::kMaxDims; ++b) {
      const int64_t below = prefix;
      prefix *= v->ne[b];
      if (prefix != run) continue;
      for (const Pieces& p : base.pieces) {
        for (const Range& r : p) {
          if ((r.lo * inner) % below != 0 || (r.hi * inner) % below != 0) return std::nullopt;
        }
      }
      Dist out;
      out.kind = Kind::kSplit;
      out.axis = static_cast<int>(b);
      out.pieces = scale_pieces(base.pieces, inner, below);
      for (int d = 0; d < n_; ++d) {
        core::Shape ne = v->ne;
        ne[b] = total(out.pieces[static_cast<size_t>(d)]);
        out.shard.push_back(
            track(d, core::reshape(ctx(d), base.shard[static_cast<size_t>(d)], ne)));
      }
      return out;
    }
    return std::nullopt;
  }

  // A strided view of a split tensor (a KV cache's heads, one part of a fused product) keeps
  // the split when one of its axes walks the split axis in whole units and every member's part
  // of what it covers is one run of those units.
  std::optional<Dist> map_strided_view(const Tensor* v, const Dist& base) {
    const Tensor* bt = v->src[0];
    if (!bt->is_contiguous()) return std::nullopt;
    const auto a = static_cast<size_t>(base.axis);
    const size_t type_bytes = core::type_size(bt->type);
    const int64_t block = core::block_size(bt->type);
    const size_t above = a + 1 < core::kMaxDims ? bt->nb[a + 1] : SIZE_MAX;
    // Units of the split axis one step of a view stride covers (0: not a whole number).
    auto units_of = [&](size_t stride) -> int64_t {
      if (a == 0)
        return stride % type_bytes == 0 ? static_cast<int64_t>(stride / type_bytes) * block : 0;
      return stride % bt->nb[a] == 0 ? static_cast<int64_t>(stride / bt->nb[a]) : 0;
    };
    // Where the view starts, in the source's coordinates.
    size_t rel = v->view_offset - offset_of(bt);
    std::array<int64_t, core::kMaxDims> c{};
    for (size_t k = core::kMaxDims; k-- > a + 1;) {
      c[k] = static_cast<int64_t>(rel / bt->nb[k]);
      rel %= bt->nb[k];
    }
    const int64_t start = units_of(rel - (a == 0 ? 0 : rel % bt->nb[a]));
    const size_t inner = a == 0 ? 0 : rel % bt->nb[a];
    if (a == 0 && rel % type_bytes != 0) return std::nullopt;
    // The view axis walking the split axis: the widest stride below the next source axis (on a
    // tie the outer axis: a quantized head of one block has the stride of axis 0's blocks).
    int j = -1;
    for (size_t i = 0; i < core::kMaxDims; ++i) {
      if (v->ne[i] <= 1 || v->nb[i] >= above || units_of(v->nb[i]) == 0) continue;
      if (j < 0 || v->nb[i] >= v->nb[static_cast<size_t>(j)]) j = static_cast<int>(i);
    }
    if (j < 0) return std::nullopt;
    const auto ju = static_cast<size_t>(j);
    const int64_t unit = units_of(v->nb[ju]);
    for (size_t i = 0; i < core::kMaxDims; ++i) {
      if (i == ju || v->ne[i] <= 1 || v->nb[i] >= above) continue;
      // Bytes the axis spans (a quantized row's elements come in blocks).
      const size_t extent =
          i == 0 ? core::row_size(v->type, v->ne[0]) : static_cast<size_t>(v->ne[i]) * v->nb[i];
      if (extent > v->nb[ju]) return std::nullopt;
    }
    const Range covered{start, start + v->ne[ju] * unit};
    Dist out;
    out.kind = Kind::kSplit;
    out.axis = j;
    for (int d = 0; d < n_; ++d) {
      const Pieces& mine = base.pieces[static_cast<size_t>(d)];
      std::optional<Range> hit;
      int64_t pos = 0;
      for (const Range& r : mine) {
        const Range x{std::max(r.lo, covered.lo), std::min(r.hi, covered.hi)};
        if (x.lo < x.hi) {
          if (hit) return std::nullopt;
          hit = x;
          pos += x.lo - r.lo;
        } else if (!hit) {
          pos += r.size();
        }
      }
      if (!hit || (hit->lo - covered.lo) % unit != 0 || hit->size() % unit != 0)
        return std::nullopt;
      Tensor* shard = base.shard[static_cast<size_t>(d)];
      core::Shape ne = v->ne;
      ne[ju] = hit->size() / unit;
      core::Strides nb = v->nb;
      for (size_t i = 0; i < core::kMaxDims; ++i) {
        if (v->nb[i] < above) continue;
        // A stride over outer source axes: the same count of the shard's rows.
        size_t k = core::kMaxDims - 1;
        while (k > a + 1 && bt->nb[k] > v->nb[i]) --k;
        if (v->nb[i] % bt->nb[k] != 0) return std::nullopt;
        nb[i] = v->nb[i] / bt->nb[k] * shard->nb[k];
      }
      size_t offset = axis_bytes(*shard, static_cast<int>(a), pos) + inner;
      for (size_t k = a + 1; k < core::kMaxDims; ++k)
        offset += static_cast<size_t>(c[k]) * shard->nb[k];
      out.pieces.push_back({{(hit->lo - covered.lo) / unit, (hit->hi - covered.lo) / unit}});
      out.shard.push_back(track(d, core::view(ctx(d), shard, ne, nb, offset)));
    }
    return out;
  }

  // Member d's part [r) along `axis` of a tensor it holds whole.
  Tensor* slice(int d, Tensor* t, int axis, const Range& r) {
    core::Shape ne = t->ne;
    ne[static_cast<size_t>(axis)] = r.size();
    return track(d, core::view(ctx(d), t, ne, t->nb, axis_bytes(*t, axis, r.lo)));
  }

  // --- Making tensors whole, and partial sums mirrored ---------------------------------------

  // Member d writes `src` into `t`'s own bytes at `offset`, laid out as ne/nb.
  void write_into(int d, Tensor* t, const core::Shape& ne, const core::Strides& nb, size_t offset,
                  Tensor* src) {
    Tensor* c = ctx(d).new_tensor(t->type, ne, t->name + "#whole");
    c->op = Op::kCpy;
    c->nb = nb;
    c->src[0] = src;
    c->view_src = t;
    c->view_offset = offset;
    emit(d, c);
  }

  // Makes the storage tensor `t` whole in its own bytes (it keeps its shards for later readers).
  void materialize(Tensor* t) {
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
    x_.log += "meta: " + t->name + " " + shape_text(*t) + " made whole\n";
  }

  // All-reduce into a copy per member. Each member sums every member's partial, in member order,
  // after one round of waits: for two members that reads as many bytes as a reduce-scatter
  // followed by an all-gather, with half the waits, and for small tensors (decode) the waits
  // are what costs. Large partials over three or more members go through reduce_scatter_gather.
  void reduce(Tensor* t) {
    Dist& x = of(t);
    if (n_ >= 3 && t->nbytes() >= kScatterBytes && t->type == core::Type::kF32 &&
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
        // Read through a view, so the sum never overwrites a partial in place.
        Tensor* pv = track(d, core::view(ctx(d), p, p->ne, p->nb, 0));
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

  // A flat run [lo, hi) of member d's view of `p` (contiguous F32).
  Tensor* flat(int d, Tensor* p, int64_t lo, int64_t hi) {
    const auto len = hi - lo;
    return track(d, core::view(ctx(d), p, {len, 1, 1, 1},
                               {sizeof(float), len * sizeof(float), len * sizeof(float),
                                len * sizeof(float)},
                               static_cast<size_t>(lo) * sizeof(float)));
  }

  // All-reduce of a large partial over three or more members: each member sums its own chunk
  // of every partial (reduce-scatter), then copies the other chunks from the members that
  // summed them (all-gather): 2(N-1)/N of the tensor read per member instead of N-1.
  void reduce_scatter_gather(Tensor* t, Dist& x) {
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

  // --- Rules ---------------------------------------------------------------------------------

  Tensor* clone(int d, const Tensor& n, const std::array<Tensor*, core::kMaxSrc>& src,
                const core::Shape& ne) {
    Tensor* t = ctx(d).new_tensor(n.type, ne, n.name);
    t->op = n.op;
    t->params = n.params;
    t->src = src;
    emit(d, t);
    return t;
  }

  Dist& reduced(Tensor* s) {
    if (of(s).kind == Kind::kPartial) reduce(s);
    return of(s);
  }

  bool apply(Tensor* n) {
    switch (n->op) {
      case Op::kAdd:
      case Op::kMul:
      case Op::kDiv:
      case Op::kSwiglu:
        return elementwise(n, 2, 0);
      case Op::kScale:
      case Op::kSilu:
      case Op::kGelu:
      case Op::kTanh:
      case Op::kCpy:
        return elementwise(n, 1, 0);
      case Op::kRmsNorm:
        return elementwise(n, 1, 1u << 0);
      case Op::kSoftMax:
        return elementwise(n, 2, 1u << 0);
      case Op::kRope:
        // Rows rotate on their own; positions go with dimension 2, so that one stays whole.
        return elementwise(n, 1, (1u << 0) | (1u << 2));
      case Op::kGetRows:
        return get_rows(n);
      case Op::kMulMat:
      case Op::kMulMatId:
        return mul_mat(n);
      case Op::kFlashAttn:
        return flash_attn(n);
      case Op::kSetRows:
        return set_rows(n);
      default:
        return false;
    }
  }

  // Ops whose first `shaped` sources line up with the output element by element (a smaller
  // source broadcasts); the rest are read whole. `forbidden` axes may not be split (the op
  // mixes elements along them).
  bool elementwise(Tensor* n, int shaped, unsigned forbidden) {
    const Dist* lead = nullptr;
    for (int i = 0; i < shaped; ++i) {
      Tensor* s = n->src[static_cast<size_t>(i)];
      if (s == nullptr) continue;
      const Dist& x = reduced(s);
      if (x.kind == Kind::kSplit && lead == nullptr) lead = &x;
    }
    for (size_t i = static_cast<size_t>(shaped); i < core::kMaxSrc; ++i) {
      if (n->src[i] != nullptr && reduced(n->src[i]).kind != Kind::kMirrored) return false;
    }
    if (lead == nullptr) {
      std::vector<Tensor*> out(static_cast<size_t>(n_));
      for (int d = 0; d < n_; ++d) {
        std::array<Tensor*, core::kMaxSrc> src{};
        for (size_t i = 0; i < core::kMaxSrc; ++i) {
          if (n->src[i] != nullptr) src[i] = use(of(n->src[i]), d);
        }
        out[static_cast<size_t>(d)] = clone(d, *n, src, n->ne);
      }
      Dist m;
      m.shard = std::move(out);
      dist_.insert_or_assign(n, std::move(m));
      return true;
    }
    const int a = lead->axis;
    const auto au = static_cast<size_t>(a);
    if ((forbidden >> a) & 1u) return false;
    const std::vector<Pieces> pieces = lead->pieces;
    for (int i = 0; i < shaped; ++i) {
      Tensor* s = n->src[static_cast<size_t>(i)];
      if (s == nullptr) continue;
      const Dist& x = of(s);
      if (x.kind == Kind::kSplit) {
        if (x.axis != a || x.pieces != pieces) return false;
      } else if (s->ne[au] != 1 && (s->ne[au] != n->ne[au] || !single_pieces(pieces))) {
        return false;
      }
    }
    Dist out;
    out.kind = Kind::kSplit;
    out.axis = a;
    out.pieces = pieces;
    for (int d = 0; d < n_; ++d) {
      const Range& mine = pieces[static_cast<size_t>(d)].front();
      std::array<Tensor*, core::kMaxSrc> src{};
      for (size_t i = 0; i < core::kMaxSrc; ++i) {
        Tensor* s = n->src[i];
        if (s == nullptr) continue;
        const Dist& x = of(s);
        Tensor* t = use(x, d);
        if (static_cast<int>(i) < shaped && x.kind != Kind::kSplit && s->ne[au] != 1) {
          t = slice(d, t, a, mine);
        }
        src[i] = t;
      }
      core::Shape ne = n->ne;
      ne[au] = total(pieces[static_cast<size_t>(d)]);
      out.shard.push_back(clone(d, *n, src, ne));
    }
    dist_.insert_or_assign(n, std::move(out));
    return true;
  }

  bool get_rows(Tensor* n) {
    if (reduced(n->src[1]).kind != Kind::kMirrored) return false;
    const Dist& tb = of(n->src[0]);
    if (tb.kind == Kind::kSplit && tb.axis != 0) return false;
    Dist out;
    out.kind = tb.kind;
    out.axis = tb.axis;
    out.pieces = tb.pieces;
    for (int d = 0; d < n_; ++d) {
      core::Shape ne = n->ne;
      if (tb.kind == Kind::kSplit) ne[0] = total(tb.pieces[static_cast<size_t>(d)]);
      Tensor* table = use(tb, d);
      out.shard.push_back(clone(d, *n, {table, use(of(n->src[1]), d), nullptr, nullptr}, ne));
    }
    dist_.insert_or_assign(n, std::move(out));
    return true;
  }

  bool mul_mat(Tensor* n) {
    Tensor* a = n->src[0];
    Tensor* b = n->src[1];
    Tensor* ids = n->src[2];
    if (ids != nullptr && reduced(ids).kind != Kind::kMirrored) return false;
    const Dist A = reduced(a);
    const Dist B = reduced(b);
    const bool as = A.kind == Kind::kSplit, bs = B.kind == Kind::kSplit;
    // Which case, and per member the operands and the output's shape.
    std::vector<std::array<Tensor*, core::kMaxSrc>> src(static_cast<size_t>(n_));
    std::vector<core::Shape> ne(static_cast<size_t>(n_), n->ne);
    Dist out;
    if (as && A.axis == 1 && !bs) {
      // Output features split (Q, K, V, gate, up, vocabulary rows): a split output.
      out.kind = Kind::kSplit;
      out.axis = 0;
      out.pieces = A.pieces;
      for (int d = 0; d < n_; ++d) {
        src[static_cast<size_t>(d)] = {use(A, d), use(B, d), ids ? use(of(ids), d) : nullptr,
                                       nullptr};
        ne[static_cast<size_t>(d)][0] = total(A.pieces[static_cast<size_t>(d)]);
      }
    } else if ((as && A.axis == 0) || (bs && B.axis == 0 && !as)) {
      // Input features split (attention output, FFN down): partial sums.
      const Dist& lead = as ? A : B;
      if ((as && bs && (B.axis != 0 || B.pieces != A.pieces)) ||
          (!(as && bs) && !single_pieces(lead.pieces)) ||
          (bs && !as && core::is_quantized(a->type))) {
        return false;
      }
      out.kind = Kind::kPartial;
      for (int d = 0; d < n_; ++d) {
        const Range& mine = lead.pieces[static_cast<size_t>(d)].front();
        Tensor* ad = as ? use(A, d) : slice(d, use(A, d), 0, mine);
        Tensor* bd = bs ? use(B, d) : slice(d, use(B, d), 0, mine);
        src[static_cast<size_t>(d)] = {ad, bd, ids ? use(of(ids), d) : nullptr, nullptr};
      }
    } else if (ids == nullptr && ((as && A.axis == 2) || (bs && B.axis == 2))) {
      // Heads (attention scores and their product with V): a split over dimension 2, K's and V's
      // heads shared by groups of query heads.
      if ((as && A.axis != 2) || (bs && B.axis != 2) || a->ne[2] == 0 || b->ne[2] % a->ne[2] != 0) {
        return false;
      }
      const int64_t r = b->ne[2] / a->ne[2];
      std::vector<Pieces> pa, pb;
      if (as) {
        pa = A.pieces;
        pb = scale_pieces(pa, r, 1);
        if (bs && B.pieces != pb) return false;
      } else {
        pb = B.pieces;
        if (!divides_pieces(pb, r)) return false;
        pa = scale_pieces(pb, 1, r);
      }
      if (!single_pieces(pb)) return false;
      out.kind = Kind::kSplit;
      out.axis = 2;
      out.pieces = pb;
      for (int d = 0; d < n_; ++d) {
        const auto du = static_cast<size_t>(d);
        Tensor* ad = as ? use(A, d) : slice(d, use(A, d), 2, pa[du].front());
        Tensor* bd = bs ? use(B, d) : slice(d, use(B, d), 2, pb[du].front());
        src[du] = {ad, bd, nullptr, nullptr};
        ne[du][2] = total(pb[du]);
      }
    } else if (!as && !bs) {
      for (int d = 0; d < n_; ++d) {
        src[static_cast<size_t>(d)] = {use(A, d), use(B, d), ids ? use(of(ids), d) : nullptr,
                                       nullptr};
      }
    } else {
      return false;
    }
    for (int d = 0; d < n_; ++d) {
      out.shard.push_back(clone(d, *n, src[static_cast<size_t>(d)], ne[static_cast<size_t>(d)]));
    }
    dist_.insert_or_assign(n, std::move(out));
    return true;
  }

  // q [hd, T, heads], k and v [hd, n_kv, kv heads] -> [hd, heads, T]: split by heads.
  bool flash_attn(Tensor* n) {
    Tensor* q = n->src[0];
    Tensor* k = n->src[1];
    Tensor* v = n->src[2];
    Tensor* mask = n->src[3];
    if (mask != nullptr && reduced(mask).kind != Kind::kMirrored) return false;
    const Dist Q = reduced(q), K = reduced(k), V = reduced(v);
    for (const Dist* x : {&Q, &K, &V}) {
      if (x->kind == Kind::kSplit && x->axis != 2) return false;
    }
    if (k->ne[2] == 0 || q->ne[2] % k->ne[2] != 0) return false;
    const int64_t r = q->ne[2] / k->ne[2];
    std::vector<Pieces> pq;
    if (Q.kind == Kind::kSplit) {
      pq = Q.pieces;
    } else if (K.kind == Kind::kSplit) {
      pq = scale_pieces(K.pieces, r, 1);
    } else if (V.kind == Kind::kSplit) {
      pq = scale_pieces(V.pieces, r, 1);
    } else {
      return false;
    }
    if (!single_pieces(pq) || !divides_pieces(pq, r)) return false;
    const std::vector<Pieces> pk = scale_pieces(pq, 1, r);
    if ((K.kind == Kind::kSplit && K.pieces != pk) || (V.kind == Kind::kSplit && V.pieces != pk)) {
      return false;
    }
    Dist out;
    out.kind = Kind::kSplit;
    out.axis = 1;
    out.pieces = pq;
    for (int d = 0; d < n_; ++d) {
      const auto du = static_cast<size_t>(d);
      auto part = [&](const Dist& x, const std::vector<Pieces>& p) {
        Tensor* t = use(x, d);
        return x.kind == Kind::kSplit ? t : slice(d, t, 2, p[du].front());
      };
      core::Shape ne = n->ne;
      ne[1] = total(pq[du]);
      out.shard.push_back(clone(
          d, *n, {part(Q, pq), part(K, pk), part(V, pk), mask ? use(of(mask), d) : nullptr}, ne));
    }
    dist_.insert_or_assign(n, std::move(out));
    return true;
  }

  // Rows written into a cache split by heads: each member writes its heads of every row (or,
  // into a cache every member holds whole, every row).
  bool set_rows(Tensor* n) {
    const Dist D = of(n->src[0]);
    const bool split = D.kind == Kind::kSplit;
    if (D.whole || D.kind == Kind::kPartial || (split && D.axis != 0)) return false;
    if (reduced(n->src[2]).kind != Kind::kMirrored) return false;
    Tensor* rows = n->src[1];
    Dist R = reduced(rows);
    if (R.kind == Kind::kSplit && (!split || R.axis != 0 || R.pieces != D.pieces)) {
      materialize(const_cast<Tensor*>(core::storage_of(rows)));
      R = whole(rows);
    }
    if (split && R.kind != Kind::kSplit && !single_pieces(D.pieces)) return false;
    Dist out = D;
    out.shard.clear();
    for (int d = 0; d < n_; ++d) {
      const auto du = static_cast<size_t>(d);
      Tensor* cache = D.shard[du];
      Tensor* r = use(R, d);
      if (split && R.kind != Kind::kSplit) r = slice(d, r, 0, D.pieces[du].front());
      Tensor* t = ctx(d).new_tensor(n->type, cache->ne, n->name);
      t->op = Op::kSetRows;
      t->nb = cache->nb;
      t->src = {cache, r, use(of(n->src[2]), d), nullptr};
      t->view_src = const_cast<Tensor*>(core::storage_of(cache));
      t->view_offset = offset_of(cache);
      emit(d, t);
      out.shard.push_back(t);
    }
    dist_.insert_or_assign(n, std::move(out));
    return true;
  }

  // No rule fits: split sources are made whole, partial ones summed, and every member
  // computes the node whole (mirrored).
  void fallback(Tensor* n) {
    std::array<Dist, core::kMaxSrc> x;
    for (size_t i = 0; i < core::kMaxSrc; ++i) {
      Tensor* s = n->src[i];
      if (s == nullptr) continue;
      x[i] = reduced(s);
      if (x[i].kind == Kind::kSplit) {
        materialize(const_cast<Tensor*>(core::storage_of(s)));
        x[i] = whole(s);
      }
    }
    Dist m;
    for (int d = 0; d < n_; ++d) {
      std::array<Tensor*, core::kMaxSrc> src{};
      for (size_t i = 0; i < core::kMaxSrc; ++i) {
        if (n->src[i] != nullptr) src[i] = use(x[i], d);
      }
      m.shard.push_back(clone(d, *n, src, n->ne));
    }
    dist_.insert_or_assign(n, std::move(m));
    x_.log += "meta: " + n->name + " (" + std::string(core::op_name(n->op)) +
              ") has no split rule for its inputs: every device computes it whole\n";
  }

  const MetaDevice& dev_;
  Expansion& x_;
  const int n_;
  std::unordered_map<const Tensor*, Dist> dist_;
  // Whole tensors written in this run, and by which members.
  std::unordered_map<const Tensor*, std::vector<int>> writers_;
  std::unordered_set<const Tensor*> written_;
  std::vector<std::vector<Tensor*>> pending_;
  std::vector<std::vector<uint32_t>> seen_;
  std::vector<bool> dirty_;
  // Per member, memory other members may still be reading.
  std::vector<std::vector<Tensor*>> held_;
};

}  // namespace

std::vector<uint64_t> expansion_key(const core::Graph& g) {
  std::vector<uint64_t> k;
  k.reserve(g.nodes.size() * 32);
  auto put = [&k](const Tensor* t) {
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
  for (const Tensor* n : g.nodes) {
    put(n);
    k.push_back(std::hash<std::string>{}(n->name));
    for (const Tensor* s : n->src) {
      if (s != nullptr) put(s);
    }
  }
  return k;
}

Result<std::unique_ptr<Expansion>> expand(const core::Graph& g, const MetaDevice& device) {
  auto x = std::make_unique<Expansion>();
  Builder b(device, *x);
  STRATA_RETURN_IF_ERROR(b.run(g));
  return x;
}

}  // namespace strata::meta
