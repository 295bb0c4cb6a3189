// Planning a graph: which backend runs each node, where splits fall, what each split copies.
#include <map>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "backend/device.h"
#include "sched/node_roles.h"
#include "sched/plan.h"
#include "sched/scheduler.h"

namespace strata::sched {

using core::Tensor;

std::unique_ptr<Plan> clone_graph(const core::Graph& graph, GraphSignature signature,
                                  std::span<const void* const> compute_buffers) {
  auto p = std::make_unique<Plan>();
  p->signature = std::move(signature);
  p->ctx = std::make_unique<core::Context>();
  std::unordered_map<const Tensor*, Tensor*> clone_of;
  clone_of.reserve(graph.nodes.size() + graph.leafs.size());
  auto unplaced = [&](const Tensor& t) {
    return t.data == nullptr || placed_by(t, compute_buffers);
  };
  auto make_clone = [&](const Tensor& t) {
    Tensor* c = p->ctx->new_tensor(t.type, t.ne, t.name);
    *c = t;
    if (unplaced(t)) {
      c->data = nullptr;
      c->buffer = nullptr;
    } else if (!t.is_view()) {
      p->caller_placed.push_back(c);
    }
    clone_of[&t] = c;
    return c;
  };
  for (size_t i = 0; i < graph.leafs.size(); ++i) {
    Tensor* l = graph.leafs[i];
    // Tensors with memory of their own (weights, the KV cache) are shared, not cloned.
    if (!unplaced(*l)) {
      p->graph.leafs.push_back(l);
      continue;
    }
    p->graph.leafs.push_back(make_clone(*l));
    p->io_leafs.push_back(static_cast<uint32_t>(i));
  }
  auto remap = [&](Tensor* t) {
    if (t == nullptr) return t;
    auto it = clone_of.find(t);
    return it != clone_of.end() ? it->second : t;
  };
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Tensor& n = *graph.nodes[i];
    Tensor* c = make_clone(n);
    for (Tensor*& s : c->src) s = remap(s);
    c->view_src = remap(c->view_src);
    p->graph.nodes.push_back(c);
    if (n.has_flag(core::kFlagOutput)) p->io_nodes.push_back(static_cast<uint32_t>(i));
  }
  return p;
}

Status Scheduler::plan(Plan& p) {
  core::Graph& graph = p.graph;
  auto location = [this, &p](const Tensor& t) { return this->location(&p, t); };
  const int n_backends = static_cast<int>(backends_.size());
  const int host = n_backends - 1;

  // Pin: nodes reading a weight run where the weight is; cache writes run where the cache is.
  std::vector<int> where(graph.nodes.size(), -1);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Tensor& n = *graph.nodes[i];
    if (!is_compute(n)) continue;
    if (const Tensor* w = first_weight(n)) {
      where[i] = location(*w);
    } else if (n.op == core::Op::kSetRows) {
      where[i] = location(*n.view_src);
    }
  }
  // Follow neighbours: forward from the last pinned node, then backward for a leading run.
  int last = -1;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (!is_compute(*graph.nodes[i])) continue;
    if (where[i] >= 0) {
      last = where[i];
    } else {
      where[i] = last;
    }
  }
  int next = host;
  for (size_t i = graph.nodes.size(); i-- > 0;) {
    if (!is_compute(*graph.nodes[i])) continue;
    if (where[i] >= 0) {
      next = where[i];
    } else {
      where[i] = next;
    }
  }
  // An unpinned node whose readers all run on one other backend moves there, so a chain
  // such as a layer's leading norm follows the layer instead of adding a split boundary.
  // Walking backwards lets whole chains move.
  {
    std::vector<bool> pinned(graph.nodes.size(), false);
    std::unordered_map<const Tensor*, size_t> index;
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      index[graph.nodes[i]] = i;
      const Tensor& n = *graph.nodes[i];
      pinned[i] = is_compute(n) && (first_weight(n) != nullptr || n.op == core::Op::kSetRows);
    }
    std::vector<std::vector<size_t>> readers(graph.nodes.size());
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      for (const Tensor* s : graph.nodes[i]->src) {
        if (s == nullptr) continue;
        // A view's readers read the node the view was taken of.
        while (s != nullptr && core::is_view_op(s->op)) s = s->src[0];
        if (auto it = index.find(s); it != index.end()) readers[it->second].push_back(i);
      }
    }
    std::vector<int> target(graph.nodes.size(), -1);
    for (size_t i = graph.nodes.size(); i-- > 0;) {
      const Tensor& n = *graph.nodes[i];
      if (!is_compute(n)) continue;
      if (pinned[i] || n.has_flag(core::kFlagOutput) || readers[i].empty()) continue;
      int common = -2;
      // Readers may be views; look through them to the compute nodes that use them.
      std::vector<size_t> stack = readers[i];
      while (!stack.empty() && common != -1) {
        const size_t r = stack.back();
        stack.pop_back();
        if (!is_compute(*graph.nodes[r])) {
          stack.insert(stack.end(), readers[r].begin(), readers[r].end());
          continue;
        }
        common = common == -2 || common == where[r] ? where[r] : -1;
      }
      // Moving pays when it copies no more than it saves: at most one input computed here.
      int local_inputs = 0;
      for (const Tensor* src : n.src) {
        while (src != nullptr && core::is_view_op(src->op)) src = src->src[0];
        auto it = src != nullptr ? index.find(src) : index.end();
        if (it != index.end() && where[it->second] == where[i]) ++local_inputs;
      }
      if (common >= 0 && common != where[i] && local_inputs <= 1) where[i] = common;
    }
  }
  // Fall back to the next backend in priority order that can run the op.
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (!is_compute(*graph.nodes[i])) continue;
    int b = where[i];
    while (b < host && !backends_[static_cast<size_t>(b)]->device().supports_op(*graph.nodes[i]))
      ++b;
    where[i] = b;
    p.assigned[graph.nodes[i]] = b;
  }
  // Graph inputs live with their first reader.
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (!is_compute(*graph.nodes[i])) continue;
    for (Tensor* s : graph.nodes[i]->src) {
      if (s == nullptr) continue;
      const Tensor* st = core::storage_of(s);
      if (st->op == core::Op::kNone && st->data == nullptr && !p.assigned.count(st)) {
        p.assigned[st] = where[i];
      }
    }
  }

  // Cut into splits; every source living on another backend becomes a copy (views: only the
  // bytes they span, with the view re-pointed at the copy).
  std::map<std::tuple<const Tensor*, size_t, size_t>, Tensor*> copies;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    Tensor* n = graph.nodes[i];
    if (!is_compute(*n)) continue;
    if (p.splits.empty() || p.splits.back().backend != where[i]) {
      p.splits.push_back(Split{where[i], {}, {}});
      copies.clear();
    }
    Split& split = p.splits.back();
    split.nodes.push_back(n);
    for (int k = 0; k < core::kMaxSrc; ++k) {
      Tensor* s = n->src[static_cast<size_t>(k)];
      if (s == nullptr || (n->op == core::Op::kSetRows && k == 0)) continue;
      const Tensor* st = core::storage_of(s);
      const int loc = location(*st);
      if (loc == split.backend) continue;
      const bool whole = !s->is_view();
      const size_t offset = whole ? 0 : s->view_offset;
      const size_t bytes = whole ? st->nbytes() : s->nbytes();
      auto key = std::make_tuple(st, offset, bytes);
      Tensor* copy = nullptr;
      if (auto it = copies.find(key); it != copies.end()) {
        copy = it->second;
      } else {
        copy = whole ? p.ctx->new_tensor(st->type, st->ne, st->name + "#copy")
                     : p.ctx->new_tensor(core::Type::kI8, {static_cast<int64_t>(bytes), 1, 1, 1},
                                         st->name + "#range");
        copies.emplace(key, copy);
        Tensor* source = const_cast<Tensor*>(st);
        if (!whole) {
          // The copied bytes as a tensor of the copy's shape, for Backend::copy_async.
          // Its address is set once the storage is placed (see place()).
          source = p.ctx->new_tensor(core::Type::kI8, copy->ne, st->name + "#source");
        }
        split.inputs.push_back(Split::Input{st, offset, bytes, copy, source});
        p.assigned[copy] = split.backend;
      }
      if (whole) {
        n->src[static_cast<size_t>(k)] = copy;
      } else {
        // The same view over the copy: same shape and strides, starting at the copy's base.
        Tensor* v = p.ctx->new_tensor(s->type, s->ne, s->name + "#view");
        v->nb = s->nb;
        v->op = core::Op::kView;
        v->src[0] = copy;
        v->view_src = copy;
        v->view_offset = 0;
        n->src[static_cast<size_t>(k)] = v;
      }
    }
  }
  mark_shared(p);
  return {};
}

// Flags every node read outside its own split: copied to another backend, or read directly by
// a later split of the same backend.
void mark_shared(Plan& p) {
  std::unordered_map<const Tensor*, size_t> split_of;
  for (size_t i = 0; i < p.splits.size(); ++i) {
    for (const Tensor* n : p.splits[i].nodes) split_of[n] = i;
  }
  // Memory the caller placed (a KV cache) is flagged through the nodes that write it.
  std::unordered_map<const Tensor*, std::vector<Tensor*>> writers;
  for (const Split& sp : p.splits) {
    for (Tensor* n : sp.nodes) {
      if (n->is_view()) writers[core::storage_of(n)].push_back(n);
    }
  }
  for (size_t i = 0; i < p.splits.size(); ++i) {
    for (const Split::Input& in : p.splits[i].inputs) {
      if (is_compute(*in.storage)) {
        const_cast<Tensor*>(in.storage)->flags |= core::kFlagShared;
        continue;
      }
      for (Tensor* w : writers[in.storage]) w->flags |= core::kFlagShared;
    }
    for (const Tensor* n : p.splits[i].nodes) {
      for (const Tensor* s : n->src) {
        if (s == nullptr) continue;
        auto* st = const_cast<Tensor*>(core::storage_of(s));
        auto it = split_of.find(st);
        if (it != split_of.end() && it->second != i) st->flags |= core::kFlagShared;
        for (Tensor* w : writers[st]) {
          auto wt = split_of.find(w);
          if (wt != split_of.end() && wt->second != i) w->flags |= core::kFlagShared;
        }
      }
    }
  }
}

}  // namespace strata::sched
