// How the scheduler classifies nodes; shared by planning and running, internal to sched.
#pragma once

#include "core/tensor.h"

namespace strata::sched {

/// A node some backend computes (not a leaf, not a pure view).
inline bool is_compute(const core::Tensor& t) {
  return t.op != core::Op::kNone && !core::is_view_op(t.op);
}

/// The first weight a node reads (through views), or null: it pins the node to its device.
inline const core::Tensor* first_weight(const core::Tensor& node) {
  for (const core::Tensor* s : node.src) {
    if (s != nullptr && core::storage_of(s)->has_flag(core::kFlagWeight))
      return core::storage_of(s);
  }
  return nullptr;
}

}  // namespace strata::sched
