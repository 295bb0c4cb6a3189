#include "core/graph.h"

#include "core/pointer_map.h"

#include <string>
#include <utility>

namespace strata::core {

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
  return g;
}

}  // namespace strata::core
