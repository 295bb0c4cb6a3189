// The builder behind expand(): split states, the rules that propagate them, and the fences
// between members. Internal to meta; expansion.cpp explains the states.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/context.h"
#include "core/graph.h"
#include "core/ops.h"
#include "core/status.h"
#include "meta/expansion.h"
#include "meta/meta_device.h"
#include "meta/shard_ranges.h"

namespace strata::meta::detail {

using core::Op;
using core::Tensor;

enum class Kind : uint8_t { kMirrored, kSplit, kPartial };

struct Dist {
  Kind kind = Kind::kMirrored;
  int axis = -1;
  std::vector<Pieces> pieces;
  std::vector<Tensor*> shard;
  bool whole = false;  ///< mirrored by being the graph's own tensor (shard[d] is it)
};

inline bool computes(const Tensor& t) {
  return t.op != Op::kNone && !core::is_view_op(t.op);
}

inline size_t offset_of(const Tensor* t) {
  return t->is_view() ? t->view_offset : 0;
}

// Byte offset of element i along axis a of t.
inline size_t axis_bytes(const Tensor& t, int a, int64_t i) {
  if (a == 0) return core::row_size(t.type, i);
  return static_cast<size_t>(i) * t.nb[static_cast<size_t>(a)];
}

inline bool single_pieces(const std::vector<Pieces>& p) {
  for (const Pieces& x : p) {
    if (x.size() != 1) return false;
  }
  return true;
}

inline std::vector<Pieces> scale_pieces(const std::vector<Pieces>& p, int64_t mul, int64_t div) {
  std::vector<Pieces> out = p;
  for (Pieces& x : out) {
    for (Range& r : x) r = {r.lo * mul / div, r.hi * mul / div};
  }
  return out;
}

inline bool divides_pieces(const std::vector<Pieces>& p, int64_t by) {
  for (const Pieces& x : p) {
    for (const Range& r : x) {
      if (r.lo % by != 0 || r.hi % by != 0) return false;
    }
  }
  return true;
}

inline std::string shape_text(const Tensor& t) {
  std::string s = "[";
  for (size_t i = 0; i < core::kMaxDims; ++i) s += (i ? "," : "") + std::to_string(t.ne[i]);
  return s + "]";
}

class Builder {
 public:
  Builder(const MetaDevice& dev, Expansion& x);
  Status run(const core::Graph& g);

 private:
  core::Context& ctx(int d) { return *x_.members[static_cast<size_t>(d)].ctx; }
  MemberWork& work(int d) { return x_.members[static_cast<size_t>(d)]; }

  // --- Work and fences -------------------------------------------------------------------
  Tensor* track(int d, Tensor* t);
  void emit(int d, Tensor* t);
  void flush(int d);
  // Member d's later work starts after everything member e was given so far.
  void need(int d, int e);
  // Member d waits for every other member; memory of d's that they were reading is free then.
  void need_all(int d);
  void release(int d);
  void need_writers(int d, const Tensor* storage);
  // Queues a step of member d (not compute) after its pending compute.
  void step(int d, Step s);

  // --- Members that cannot address each other's memory (another process's) ----------------
  // Whether member d can read and write t's bytes where they are.
  bool reaches(int d, const Tensor* t) const;
  // `t` for member d: t itself where d reaches it, otherwise the same view of a copy of its
  // storage in d's memory, made (once per version of that storage) by a copy step.
  Tensor* reachable(int d, Tensor* t);

  // --- States ------------------------------------------------------------------------------
  Dist whole(Tensor* t) const;
  // Member d's tensor for `x`, once what it reads has been written.
  Tensor* use(const Dist& x, int d);
  Dist& of(Tensor* s);

  // --- Views -------------------------------------------------------------------------------
  // The view `v` takes of its source, taken of member d's tensor `b` laid out like it.
  Tensor* same_view(int d, const Tensor* v, Tensor* b);
  std::optional<Dist> map_view(const Tensor* v, const Dist& base);
  // A reshape keeps a split when the split axis's blocks survive it: the run of elements the
  // axis and those below it span stays one run of the new shape.
  std::optional<Dist> map_reshape(const Tensor* v, const Dist& base);
  // A strided view of a split tensor (a KV cache's heads, one part of a fused product) keeps
  // the split when one of its axes walks the split axis in whole units and every member's part
  // of what it covers is one run of those units.
  std::optional<Dist> map_strided_view(const Tensor* v, const Dist& base);
  // Member d's part [r) along `axis` of a tensor it holds whole.
  Tensor* slice(int d, Tensor* t, int axis, const Range& r);

  // --- Making tensors whole, and partial sums mirrored ---------------------------------------
  // Member d writes `src` into `t`'s own bytes at `offset`, laid out as ne/nb.
  void write_into(int d, Tensor* t, const core::Shape& ne, const core::Strides& nb, size_t offset,
                  Tensor* src);
  // Makes the storage tensor `t` whole in its own bytes (it keeps its shards for later readers).
  void materialize(Tensor* t);
  // All-reduce into a copy per member. Each member sums every member's partial, in member order,
  // after one round of waits: for two members that reads as many bytes as a reduce-scatter
  // followed by an all-gather, with half the waits, and for small tensors (decode) the waits
  // are what costs. Large partials over three or more members go through reduce_scatter_gather.
  void reduce(Tensor* t);
  // All-reduce as one step per member of the device's collective: no member reads another's
  // memory, so no fences either.
  void reduce_collective(Tensor* t, Dist& x);
  // A flat run [lo, hi) of member d's view of `p` (contiguous F32).
  Tensor* flat(int d, Tensor* p, int64_t lo, int64_t hi);
  // All-reduce of a large partial over three or more members: each member sums its own chunk
  // of every partial (reduce-scatter), then copies the other chunks from the members that
  // summed them (all-gather): 2(N-1)/N of the tensor read per member instead of N-1.
  void reduce_scatter_gather(Tensor* t, Dist& x);

  // --- Rules ---------------------------------------------------------------------------------
  Tensor* clone(int d, const Tensor& n, const std::array<Tensor*, core::kMaxSrc>& src,
                const core::Shape& ne);
  Dist& reduced(Tensor* s);
  bool apply(Tensor* n);
  // Ops whose first `shaped` sources line up with the output element by element (a smaller
  // source broadcasts); the rest are read whole. `forbidden` axes may not be split (the op
  // mixes elements along them).
  bool elementwise(Tensor* n, int shaped, unsigned forbidden);
  bool get_rows(Tensor* n);
  bool mul_mat(Tensor* n);
  // q [hd, T, heads], k and v [hd, n_kv, kv heads] -> [hd, heads, T]: split by heads.
  bool flash_attn(Tensor* n);
  // Rows written into a cache split by heads: each member writes its heads of every row (or,
  // into a cache every member holds whole, every row).
  bool set_rows(Tensor* n);
  // No rule fits: split sources are made whole, partial ones summed, and every member
  // computes the node whole (mirrored).
  void fallback(Tensor* n);

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
  // Per member: whether it addresses host memory (and so every member that does), and its
  // copies of storage it does not reach, until that storage is written again.
  std::vector<bool> host_;
  std::vector<std::unordered_map<const Tensor*, Tensor*>> copies_;
};

}  // namespace strata::meta::detail
