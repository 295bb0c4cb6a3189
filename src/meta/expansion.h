// One graph of a meta device turned into a sub-graph per member, with the event fences and
// all-reduces between them. Internal to meta.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/context.h"
#include "core/graph.h"
#include "core/ops.h"
#include "core/status.h"

namespace strata::meta {

class MetaDevice;

/// What one member's queue does, in order.
struct Step {
  enum class Kind : uint8_t {
    kCompute,    ///< run `graph` (shard nodes)
    kSignal,     ///< raise the member's own event by one (its index-th signal of the run)
    kWait,       ///< wait for member `other`'s index-th signal of the run
    kCopy,       ///< copy all of `src` (memory the member cannot address) into its own `dst`
    kCopyOut,    ///< copy the member's contiguous `src` into `dst` at `offset`, laid out as ne/nb
    kAllReduce,  ///< its part of the device's collective: `dst` = sum of every member's `src`
  };
  Kind kind = Kind::kCompute;
  core::Graph graph;
  int other = -1;
  uint32_t index = 0;
  core::Tensor* dst = nullptr;
  core::Tensor* src = nullptr;
  size_t offset = 0;
  core::Shape ne{};
  core::Strides nb{};
};

struct MemberWork {
  std::unique_ptr<core::Context> ctx = std::make_unique<core::Context>();
  std::vector<Step> steps;
  /// Every tensor of ctx in execution order (views and phantom readers included): what the
  /// member's allocator places, with lifetimes that cover reads by other members.
  core::Graph alloc;
  std::unordered_set<const core::Tensor*> owned;
  uint32_t signals = 0;
  uint64_t placed_at = UINT64_MAX;  ///< allocator generation it was placed in
};

/// A graph expanded over the members. Its tensors refer to the graph's own tensors, so an
/// expansion is valid for exactly the graph (node identity, shapes, addresses) it was built
/// from: see expansion_key.
struct Expansion {
  std::vector<uint64_t> key;
  std::vector<MemberWork> members;
  /// Split states and all-reduces, for STRATA_SCHED_DEBUG.
  std::string log;
  uint64_t last_used = 0;
};

/// Identifies what an expansion depends on: every node's identity, op, flags, shape and
/// address, and the same for its sources.
std::vector<uint64_t> expansion_key(const core::Graph& g);

/// Builds the per-member work for `g`, whose nodes the meta device runs (its sources may
/// live anywhere the host addresses).
Result<std::unique_ptr<Expansion>> expand(const core::Graph& g, const MetaDevice& device);

}  // namespace strata::meta
