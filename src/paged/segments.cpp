#include "paged/segments.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace strata::paged {
namespace {

using core::Tensor;

constexpr size_t kAbsent = static_cast<size_t>(-1);

bool computes(const Tensor& t) {
  return t.op != core::Op::kNone && !core::is_view_op(t.op);
}

// Finds the schedule's names in one graph: for each, the index of the node producing its data
// (a view resolves to the node it views) and the tensor itself, for blits.
class NameLookup {
 public:
  NameLookup(const core::Graph& graph, const std::vector<std::string_view>& names) : graph_(graph) {
    // One slot per distinct name: a cut and a window endpoint may name the same node.
    ids_.reserve(names.size());
    for (std::string_view n : names) {
      auto [it, added] = ids_.emplace(n, ids_.size());
      slot_of_.push_back(it->second);
    }
    pos_.assign(ids_.size(), kAbsent);
    tensor_.assign(ids_.size(), nullptr);
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      Tensor* n = graph.nodes[i];
      if (computes(*n)) {
        note(n, i);
      } else if (n->is_view()) {
        note_view(n);
      }
      for (Tensor* s : n->src) {
        if (s == nullptr || s->name.empty()) continue;
        if (s->is_view()) {
          note_view(s);
        } else if (auto id = find(s->name); id != kAbsent && tensor_[id] == nullptr) {
          tensor_[id] = s;  // a leaf or another split's copy: a blit may name it
        }
      }
    }
  }
  /// For the id-th name given: the node index, or kAbsent.
  size_t position(size_t id) const { return pos_[slot_of_[id]]; }
  Tensor* tensor(size_t id) const { return tensor_[slot_of_[id]]; }

 private:
  size_t find(const std::string& name) const {
    auto it = ids_.find(name);
    return it == ids_.end() ? kAbsent : it->second;
  }
  void note(Tensor* n, size_t i) {
    const size_t id = find(n->name);
    if (id == kAbsent || pos_[id] != kAbsent) return;
    pos_[id] = i;
    tensor_[id] = n;
  }
  void note_view(Tensor* v) {
    const size_t id = find(v->name);
    if (id == kAbsent || pos_[id] != kAbsent) return;
    if (tensor_[id] == nullptr) tensor_[id] = v;
    const Tensor* producer = core::storage_of(v);
    if (index_.empty()) {
      for (size_t i = 0; i < graph_.nodes.size(); ++i) index_.emplace(graph_.nodes[i], i);
    }
    if (auto it = index_.find(producer); it != index_.end()) pos_[id] = it->second;
  }

  const core::Graph& graph_;
  std::unordered_map<std::string_view, size_t> ids_;  // name to slot
  std::vector<size_t> slot_of_;
  std::unordered_map<const Tensor*, size_t> index_;  // built on the first view looked up
  std::vector<size_t> pos_;
  std::vector<Tensor*> tensor_;
};

}  // namespace

Result<SegmentPlan> plan_segments(const core::Graph& graph, const BoundarySchedule& schedule,
                                  const EncodeWindow* window) {
  // Name ids: cuts, then waits, then the window's endpoints and blits.
  std::vector<std::string_view> names;
  for (const Cut& c : schedule.cuts) names.push_back(c.node);
  for (const WaitPoint& w : schedule.waits) names.push_back(w.node);
  const size_t window_base = names.size();
  if (window != nullptr) {
    names.push_back(window->first);
    names.push_back(window->last);
    for (const Blit& b : window->blits_in) names.push_back(b.node);
    for (const Blit& b : window->blits_out) names.push_back(b.node);
  }
  const NameLookup lookup(graph, names);

  SegmentPlan plan;
  std::vector<size_t> cut_after;  // node indices, each ends a segment
  for (size_t c = 0; c < schedule.cuts.size(); ++c) {
    if (lookup.position(c) == kAbsent) continue;
    cut_after.push_back(lookup.position(c));
    ++plan.cuts_found;
  }
  std::sort(cut_after.begin(), cut_after.end());
  cut_after.erase(std::unique(cut_after.begin(), cut_after.end()), cut_after.end());
  size_t begin = 0;
  for (size_t at : cut_after) {
    plan.segments.push_back({begin, at + 1, {}, {}, true});
    begin = at + 1;
  }
  if (begin < graph.nodes.size() || plan.segments.empty()) {
    plan.segments.push_back({begin, graph.nodes.size(), {}, {}, true});
  }
  auto segment_of = [&plan](size_t node) -> Segment& {
    for (Segment& s : plan.segments) {
      if (node < s.end) return s;
    }
    return plan.segments.back();
  };
  for (size_t c = 0; c < schedule.cuts.size(); ++c) {
    const size_t at = lookup.position(c);
    if (at != kAbsent && schedule.cuts[c].signal.event != nullptr)
      segment_of(at).signals.push_back(schedule.cuts[c].signal);
  }
  for (size_t w = 0; w < schedule.waits.size(); ++w) {
    const size_t at = lookup.position(schedule.cuts.size() + w);
    if (at != kAbsent) segment_of(at).waits.push_back(schedule.waits[w].fence);
  }
  if (window == nullptr) return plan;

  const size_t first = lookup.position(window_base);
  const size_t last = lookup.position(window_base + 1);
  if (first == kAbsent && last == kAbsent) {  // another graph's window
    if (window->only_this_graph) {
      for (Segment& seg : plan.segments) seg.runs = false;
    }
    return plan;
  }
  if (first == kAbsent || last == kAbsent) {
    const std::string& in = first == kAbsent ? window->last : window->first;
    const std::string& out = first == kAbsent ? window->first : window->last;
    return error(ErrorCode::kInvalidArgument, "encode window: the graph contains '" + in +
                                                  "' but not '" + out +
                                                  "' (a window must lie within one graph)");
  }
  if (first > last) {
    return error(ErrorCode::kInvalidArgument,
                 "encode window: '" + window->first + "' comes after '" + window->last + "'");
  }
  plan.windowed = true;
  bool seen_first = false;
  for (size_t i = 0; i < plan.segments.size(); ++i) {
    Segment& s = plan.segments[i];
    s.runs = s.begin <= last && first < s.end;
    if (!s.runs) continue;
    if (!seen_first) plan.first_window_segment = i;
    seen_first = true;
    plan.last_window_segment = i;
  }
  size_t id = window_base + 2;
  auto resolve = [&](const std::vector<Blit>& blits, std::vector<ResolvedBlit>& out) -> Status {
    for (const Blit& b : blits) {
      Tensor* t = lookup.tensor(id++);
      if (t == nullptr) {
        return error(ErrorCode::kInvalidArgument,
                     "encode window: blit of '" + b.node + "', which the graph does not contain");
      }
      out.push_back({t, b.tensor});
    }
    return {};
  };
  STRATA_RETURN_IF_ERROR(resolve(window->blits_in, plan.blits_in));
  STRATA_RETURN_IF_ERROR(resolve(window->blits_out, plan.blits_out));
  return plan;
}

}  // namespace strata::paged
