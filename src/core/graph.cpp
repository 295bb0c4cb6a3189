#include "core/graph.h"

#include "core/pointer_map.h"

#include <algorithm>
#include <string>
#include <utility>

namespace strata::core {
namespace {

// Moves each matrix product that reads the same activations (src1) as an earlier one to just
// after it, where every other source of it is already computed: Q, K and V, or an FFN's gate
// and up, then run one after another, and a backend can take them in one pass over the
// activations (the CPU converts them once and puts no barrier in between). The DFS alone
// interleaves them with the nodes of whatever consumed them first (V's cache write before K's
// product). Only nodes move, never past a source, so the order stays topological.
void cluster_products_by_input(std::vector<Tensor*>& nodes) {
  PointerMap<size_t> position(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) position.insert(nodes[i], i);
  // Per activation tensor: its first product (the anchor, which stays) and its last so far.
  struct Cluster {
    size_t anchor;
    Tensor* tail;
  };
  PointerMap<Cluster> clusters(64);
  PointerMap<Tensor*> next(64);  // the product moved to just after a node
  std::vector<bool> moved(nodes.size(), false);
  for (size_t i = 0; i < nodes.size(); ++i) {
    Tensor* n = nodes[i];
    if (n->op != Op::kMulMat || n->src[1] == nullptr) continue;
    auto [c, fresh] = clusters.insert(n->src[1], Cluster{i, n});
    if (fresh) continue;
    bool ready = true;  // every other source is a leaf or computed before the anchor
    for (int s = 0; s < kMaxSrc; ++s) {
      const Tensor* src = n->src[s];
      if (src == nullptr || s == 1) continue;
      const size_t* at = position.find(src);
      if (at != nullptr && *at >= c->anchor) ready = false;
    }
    if (!ready) continue;
    next.insert(c->tail, n);
    c->tail = n;
    moved[i] = true;
  }
  if (std::find(moved.begin(), moved.end(), true) == moved.end()) return;
  std::vector<Tensor*> order;
  order.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (moved[i]) continue;
    for (Tensor* t = nodes[i]; t != nullptr;) {
      order.push_back(t);
      Tensor** after = next.find(t);
      t = after != nullptr ? *after : nullptr;
    }
  }
  nodes = std::move(order);
}

}  // namespace

Graph build_graph(std::span<Tensor* const> outputs) {
  Graph g;
  PointerMap<bool> visited(512);
  // Iterative post-order DFS: graphs of big models are deep enough to make recursion risky.
  std::vector<std::pair<Tensor*, int>> stack;
  for (Tensor* out : outputs) {
    if (out == nullptr) continue;
    out->flags |= kFlagOutput;
    if (visited.contains(out)) continue;
    stack.emplace_back(out, 0);
    visited.insert(out, true);
    while (!stack.empty()) {
      auto& [t, next] = stack.back();
      // Children: sources, then the viewed tensor (for views and in-place writes).
      Tensor* child = nullptr;
      while (next <= kMaxSrc && child == nullptr) {
        Tensor* c = next < kMaxSrc ? t->src[next] : t->view_src;
        ++next;
        if (c != nullptr && !visited.contains(c)) child = c;
      }
      if (child != nullptr) {
        visited.insert(child, true);
        stack.emplace_back(child, 0);
        continue;
      }
      Tensor* done = t;
      stack.pop_back();
      if (done->op == Op::kNone) {
        g.leafs.push_back(done);
      } else {
        if (done->name.empty()) done->name = "node_" + std::to_string(g.nodes.size());
        g.nodes.push_back(done);
      }
    }
  }
  cluster_products_by_input(g.nodes);
  return g;
}

}  // namespace strata::core
