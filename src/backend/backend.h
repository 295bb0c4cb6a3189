// A backend: an in-order queue of work on one device.
#pragma once

#include <cstddef>

#include "core/graph.h"
#include "core/status.h"
#include "core/tensor.h"

namespace strata::backend {

class Device;

/// An in-order queue on a device. Work is submitted asynchronously; errors raised on the
/// queue are kept and returned by the next synchronize(). On a synchronous device (the host
/// CPU) each call completes before it returns.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device& device() = 0;
  /// Queues the computation of every node of `graph` (views are never computed). All
  /// tensors must be placed in memory this backend can address.
  virtual Status compute_async(const core::Graph& graph) = 0;
  /// Queues a copy of `size` bytes from host memory `src` into `t` at byte `offset`.
  virtual Status set_async(core::Tensor& t, const void* src, size_t offset, size_t size) = 0;
  /// Queues a copy of `size` bytes of `t` at byte `offset` into host memory `dst`.
  virtual Status get_async(const core::Tensor& t, void* dst, size_t offset, size_t size) = 0;
  /// Waits until all queued work has completed; returns the first error it raised.
  virtual Status synchronize() = 0;
};

}  // namespace strata::backend
