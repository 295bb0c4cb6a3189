// A group of devices that sum tensors together (an all-reduce), each member from its own queue.
#pragma once

#include "core/status.h"
#include "core/tensor.h"

namespace strata::backend {

/// Made by Device::make_collective for a list of member devices. Each member queues its part
/// with Backend::all_reduce_async, every member the same all-reduces in the same order; a
/// part completes once every member's part has started, so no event fences it.
class Collective {
 public:
  virtual ~Collective() = default;
  /// Member `member`'s part, run in the calling thread (a queue of a member whose memory this
  /// process addresses): `dst` becomes the sum of every member's `src` (F32, contiguous, one
  /// length), the same bits on every member. Fails, rather than waiting forever, when a member
  /// is gone.
  virtual Status all_reduce_here(int member, const core::Tensor& src, core::Tensor& dst) = 0;
};

}  // namespace strata::backend
