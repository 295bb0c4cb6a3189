// Argument checks and error messages shared by backends whose memory the host can address.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "backend/event.h"
#include "core/status.h"
#include "core/tensor.h"

namespace strata::backend {

/// For set_async/get_async: kInternal when `t` is not placed, kInvalidArgument when
/// [offset, offset + size) is not inside it.
Status check_tensor_range(const core::Tensor& t, size_t offset, size_t size);

/// For copy_async into host-addressable memory: both placed (kInternal otherwise), the same
/// type and shape, both contiguous, `dst` in memory the host can address (kInvalidArgument
/// otherwise, naming both tensors). `src` may live anywhere: see copy_to_host.
Status check_host_copy(const core::Tensor& dst, const core::Tensor& src);
/// Copies all of `src` into `dst` (checked by check_host_copy): a memmove, or, from memory the
/// host cannot address, its buffer's read().
Status copy_to_host(core::Tensor& dst, const core::Tensor& src);

/// For signal: kInvalidArgument unless `event` belongs to `device` or to a meta device (whose
/// members signal its events).
Status check_event_owner(const Device& device, const Event& event);

/// The error of a queued wait on `device` for `event` to reach `value` that ended with
/// `result` (not kReached) after `timeout`.
Status wait_failure(const Device& device, const Event& event, uint64_t value, WaitResult result,
                    std::chrono::nanoseconds timeout);

}  // namespace strata::backend
