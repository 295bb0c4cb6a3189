// A backend: an in-order queue of work on one device.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/event.h"
#include "core/graph.h"
#include "core/status.h"
#include "core/tensor.h"

namespace strata::backend {

class Collective;

class Device;

/// An in-order queue on a device. Work is submitted asynchronously; errors raised on the
/// queue are kept and returned by the next synchronize(). On a synchronous device (the host
/// CPU) each call completes before it returns.
///
/// The *_async calls, signal and wait return an error at once for bad arguments; an ok
/// return means the work was queued. On an asynchronous queue, everything a call names (host
/// memory, tensors and the memory they are placed in, events) must stay valid until the work
/// has completed: after synchronize(), or once an event signalled after it has been seen.
/// A Graph object itself may be destroyed as soon as compute_async returns.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device& device() = 0;
  /// Queues the computation of every node of `graph` (views are never computed). All
  /// tensors must be placed in memory this backend can address.
  virtual Status compute_async(const core::Graph& graph) = 0;
  /// Sizes any memory of the backend's own for computing `graph` later (its nodes need not
  /// be placed yet), so that the run does not grow it. Most backends own none (the default).
  virtual Status reserve(const core::Graph& /*graph*/) { return {}; }
  /// Queues a copy of `size` bytes from host memory `src` into `t` at byte `offset`.
  virtual Status set_async(core::Tensor& t, const void* src, size_t offset, size_t size) = 0;
  /// Queues a copy of `size` bytes of `t` at byte `offset` into host memory `dst`.
  virtual Status get_async(const core::Tensor& t, void* dst, size_t offset, size_t size) = 0;
  /// Queues a copy of all of `src` into `dst`, which lives on this backend's device. Both have
  /// the same type and shape, are contiguous and placed; `src` may live on another device
  /// (for CPU-like backends: in host-addressable memory). The copy is ordered in this queue
  /// only: fence it against the work that writes `src` (that queue signals, this one waits),
  /// and against later writes of `src` (this queue signals after the copy).
  virtual Status copy_async(core::Tensor& dst, const core::Tensor& src) = 0;
  /// Queues a signal: `event` reaches `value` once all work queued before it has completed
  /// (signal-on-complete). The event must belong to this backend's device. A signal fires
  /// even when earlier work failed, so no other queue waits forever on a failed one.
  virtual Status signal(Event& event, uint64_t value) = 0;
  /// Queues a wait: work queued after it starts only once `event` has reached `value`. The
  /// event may belong to any device. A wait that outlasts BackendOptions::wait_timeout fails
  /// (kInternal: nobody signalled). On a synchronous queue the wait blocks the caller, so the
  /// signal must come from another thread or queue.
  virtual Status wait(Event& event, uint64_t value) = 0;
  /// Waits until all queued work has completed; returns the first error it raised and
  /// clears it. On an asynchronous queue, work queued after a failure is skipped (signals
  /// excepted) until this reports it; a synchronous queue returns each error from the call
  /// that raised it.
  virtual Status synchronize() = 0;
  /// Queues member `member`'s part of an all-reduce of `group` (see Collective): `dst`, on this
  /// device, becomes the sum of every member's `src`. The part runs even on a queue that failed
  /// (with whatever `src` holds), so the other members are never left waiting for it.
  /// kUnsupported where the device made no such group (the default).
  virtual Status all_reduce_async(Collective& group, int member, const core::Tensor& src,
                                  core::Tensor& dst);
};

}  // namespace strata::backend
