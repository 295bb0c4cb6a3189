#include "sched/graph_signature.h"

#include <cstring>
#include <functional>
#include <string_view>
#include <utility>

#include "core/pointer_map.h"

namespace strata::sched {
namespace {

using core::Tensor;

class Writer {
 public:
  explicit Writer(std::string& out) : out_(&out) {}
  template <typename T>
  void put(const T& v) {
    char buf[sizeof(T)];
    std::memcpy(buf, &v, sizeof(T));
    out_->append(buf, sizeof(T));
  }
  void put_name(const std::string& s) {
    put(s.size());
    out_->append(s);
  }
  void put_shape(const Tensor& t) {
    put(t.type);
    for (int64_t n : t.ne) put(n);
    for (size_t n : t.nb) put(n);
    put(t.flags);
  }

 private:
  std::string* out_;
};

enum class Ref : uint8_t { kNull, kNode, kLeaf, kExternal };

}  // namespace

bool placed_by(const Tensor& t, std::span<const void* const> compute_buffers) {
  if (t.buffer == nullptr) return false;
  for (const void* b : compute_buffers) {
    if (b == t.buffer) return true;
  }
  return false;
}

GraphSignature signature_of(const core::Graph& graph,
                            std::span<const void* const> compute_buffers) {
  GraphSignature sig;
  sig.bytes.reserve(graph.nodes.size() * 120 + graph.leafs.size() * 64);
  sig.params.reserve(graph.nodes.size());
  Writer w(sig.bytes);
  core::PointerMap<std::pair<Ref, uint32_t>> index(graph.nodes.size() + graph.leafs.size());
  w.put(graph.leafs.size());
  for (size_t i = 0; i < graph.leafs.size(); ++i) {
    const Tensor& l = *graph.leafs[i];
    index.insert(&l, {Ref::kLeaf, static_cast<uint32_t>(i)});
    if (l.data != nullptr && !placed_by(l, compute_buffers)) {
      // Memory the caller placed: the plan refers to this very tensor.
      w.put(Ref::kExternal);
      w.put(&l);
      w.put(l.data);
    } else {
      w.put(Ref::kLeaf);
      w.put_shape(l);
      w.put_name(l.name);
    }
  }
  auto ref = [&](const Tensor* t) {
    if (t == nullptr) {
      w.put(Ref::kNull);
      return;
    }
    const auto* found = index.find(t);
    if (found == nullptr) {
      w.put(Ref::kExternal);
      w.put(t);
      return;
    }
    w.put(found->first);
    w.put(found->second);
  };
  w.put(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Tensor& n = *graph.nodes[i];
    w.put(n.op);
    w.put_shape(n);
    w.put(n.view_offset);
    w.put(placed_by(n, compute_buffers) ? nullptr : n.data);
    w.put_name(n.name);
    for (const Tensor* s : n.src) ref(s);
    ref(n.view_src);
    sig.params.push_back(n.params);
    *index.insert(&n, {}).first = {Ref::kNode, static_cast<uint32_t>(i)};
  }
  sig.hash = std::hash<std::string_view>{}(sig.bytes);
  return sig;
}

}  // namespace strata::sched
