#include "mpi/wire_graph.h"

#include <cstring>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>

#include "core/types.h"

namespace strata::mpi {
namespace {

constexpr int32_t kNone = -1;

class Writer {
 public:
  explicit Writer(std::string& out) : out_(&out) {}
  template <typename T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_->append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void put_string(const std::string& s) {
    put(static_cast<uint32_t>(s.size()));
    out_->append(s);
  }

 private:
  std::string* out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <typename T>
  bool get(T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (in_.size() - pos_ < sizeof v) return false;
    std::memcpy(&v, in_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return true;
  }
  bool get_string(std::string& s) {
    uint32_t n = 0;
    if (!get(n) || in_.size() - pos_ < n) return false;
    s.assign(in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  std::string_view in_;
  size_t pos_ = 0;
};

// Op parameters: the alternative's index, then its bytes.
void put_params(Writer& w, const core::OpParams& p) {
  w.put(static_cast<uint32_t>(p.index()));
  std::visit([&w](const auto& v) { w.put(v); }, p);
}

template <size_t I = 0>
bool get_params(Reader& r, uint32_t index, core::OpParams& out) {
  if constexpr (I < std::variant_size_v<core::OpParams>) {
    if (index == I) {
      std::variant_alternative_t<I, core::OpParams> v;
      if (!r.get(v)) return false;
      out = v;
      return true;
    }
    return get_params<I + 1>(r, index, out);
  } else {
    return false;
  }
}

Status malformed(const std::string& what) {
  return error(ErrorCode::kMalformed, "mpi: bad graph from rank 0: " + what);
}

}  // namespace

EncodedGraph encode_graph(const core::Graph& graph) {
  EncodedGraph out;
  std::unordered_map<const core::Tensor*, int32_t> index;
  std::vector<bool> is_node;
  auto add = [&](const core::Tensor* t, bool node) {
    if (t == nullptr || index.count(t) != 0) return;
    index.emplace(t, static_cast<int32_t>(out.tensors.size()));
    out.tensors.push_back(t);
    is_node.push_back(node);
  };
  for (const core::Tensor* n : graph.nodes) {
    for (const core::Tensor* s : n->src) add(s, false);
    add(n->view_src, false);
    add(n, true);
  }
  Writer w(out.structure);
  w.put(static_cast<uint32_t>(out.tensors.size()));
  for (size_t i = 0; i < out.tensors.size(); ++i) {
    const core::Tensor& t = *out.tensors[i];
    w.put(static_cast<uint8_t>(is_node[i]));
    w.put(t.type);
    w.put(t.ne);
    w.put(t.nb);
    w.put(t.op);
    put_params(w, t.params);
    // A source's own sources are not part of the graph: only nodes keep theirs.
    const bool node = is_node[i];
    for (const core::Tensor* s : t.src) w.put(node && s != nullptr ? index.at(s) : kNone);
    w.put(node && t.view_src != nullptr ? index.at(t.view_src) : kNone);
    w.put(t.view_offset);
    w.put(t.flags);
    w.put_string(t.name);
  }
  return out;
}

Result<DecodedGraph> decode_graph(std::string_view structure) {
  Reader r(structure);
  uint32_t n = 0;
  if (!r.get(n)) return malformed("no tensor count");
  DecodedGraph out;
  for (uint32_t i = 0; i < n; ++i) {
    core::Tensor& t = out.tensors.emplace_back();
    uint8_t node = 0;
    uint32_t params_index = 0;
    if (!r.get(node) || !r.get(t.type) || !r.get(t.ne) || !r.get(t.nb) || !r.get(t.op) ||
        !r.get(params_index) || !get_params(r, params_index, t.params)) {
      return malformed("tensor " + std::to_string(i) + " is cut short");
    }
    if (!core::type_from_id(static_cast<uint32_t>(t.type)) ||
        static_cast<int>(t.op) >= core::kOpCount) {
      return malformed("tensor " + std::to_string(i) + " has an unknown type or op");
    }
    for (core::Tensor*& s : t.src) {
      int32_t k = kNone;
      if (!r.get(k)) return malformed("tensor " + std::to_string(i) + " is cut short");
      if (k == kNone) continue;
      if (k < 0 || static_cast<uint32_t>(k) >= i) {
        return malformed("tensor " + std::to_string(i) + " reads a later tensor");
      }
      s = &out.tensors[static_cast<size_t>(k)];
    }
    int32_t view = kNone;
    if (!r.get(view) || !r.get(t.view_offset) || !r.get(t.flags) || !r.get_string(t.name)) {
      return malformed("tensor " + std::to_string(i) + " is cut short");
    }
    if (view != kNone) {
      if (view < 0 || static_cast<uint32_t>(view) >= i) {
        return malformed("tensor " + std::to_string(i) + " views a later tensor");
      }
      t.view_src = &out.tensors[static_cast<size_t>(view)];
    }
    if (node != 0) out.graph.nodes.push_back(&t);
  }
  if (!r.done()) return malformed("bytes left over");
  return out;
}

std::string encode_changes(const std::vector<Placement>& before,
                           const std::vector<Placement>& now) {
  std::string out;
  Writer w(out);
  const bool all = before.size() != now.size();
  w.put(static_cast<uint32_t>(now.size()));
  for (size_t i = 0; i < now.size(); ++i) {
    if (!all && before[i] == now[i]) continue;
    w.put(static_cast<uint32_t>(i));
    w.put(now[i]);
  }
  return out;
}

Status apply_changes(std::string_view bytes, std::vector<Placement>& placements) {
  Reader r(bytes);
  uint32_t n = 0;
  if (!r.get(n)) return malformed("no placement count");
  placements.resize(n);
  while (!r.done()) {
    uint32_t i = 0;
    Placement p;
    if (!r.get(i) || !r.get(p) || i >= n) return malformed("bad placement change");
    placements[i] = p;
  }
  return {};
}

}  // namespace strata::mpi
