#include "devices/partition_backend.h"

#include <cstring>
#include <new>
#include <string>

#include "backend/checks.h"
#include "backend/collective.h"
#include "backend/device.h"
#include "cpu/graph_compute.h"
#include "devices/cpu_topology.h"
#include "memory/buffer.h"

namespace strata::devices {

PartitionBackend::PartitionBackend(backend::Device& device, cpu::ThreadPool& team, int queue_core,
                                   std::chrono::nanoseconds wait_timeout)
    : device_(&device), team_(&team), wait_timeout_(wait_timeout), queue_([queue_core] {
        // Pinning is an optimisation: a queue thread the OS will not pin still works.
        if (queue_core >= 0) {
          const int cores[] = {queue_core};
          (void)pin_current_thread(cores);
        }
      }) {}

Status PartitionBackend::compute_async(const core::Graph& graph) {
  queue_.push([this, g = graph](std::stop_token) {
    return cpu::compute_graph(g, *team_, scratch_).with_context(std::string(device_->name()));
  });
  return {};
}

Status PartitionBackend::set_async(core::Tensor& t, const void* src, size_t offset, size_t size) {
  STRATA_RETURN_IF_ERROR(backend::check_tensor_range(t, offset, size));
  push_copy(static_cast<uint8_t*>(t.data) + offset, src, size);
  return {};
}

Status PartitionBackend::get_async(const core::Tensor& t, void* dst, size_t offset, size_t size) {
  STRATA_RETURN_IF_ERROR(backend::check_tensor_range(t, offset, size));
  push_copy(dst, static_cast<const uint8_t*>(t.data) + offset, size);
  return {};
}

Status PartitionBackend::copy_async(core::Tensor& dst, const core::Tensor& src) {
  STRATA_RETURN_IF_ERROR(backend::check_host_copy(dst, src));
  if (src.buffer != nullptr && !static_cast<const memory::Buffer*>(src.buffer)->is_host()) {
    queue_.push([&dst, &src](std::stop_token) { return backend::copy_to_host(dst, src); });
    return {};
  }
  push_copy(dst.data, src.data, dst.nbytes());
  return {};
}

Status PartitionBackend::all_reduce_async(backend::Collective& group, int member,
                                          const core::Tensor& src, core::Tensor& dst) {
  queue_.push([&group, member, &src,
               &dst](std::stop_token) { return group.all_reduce_here(member, src, dst); },
              /*runs_after_error=*/true);
  return {};
}

Status PartitionBackend::signal(backend::Event& event, uint64_t value) {
  STRATA_RETURN_IF_ERROR(backend::check_event_owner(*device_, event));
  queue_.push(
      [this, &event, value](std::stop_token) {
        // A failed queue still signals, marking the values it raised as failed, so that the
        // queues it releases (a layer split's next device, a tensor split's other members)
        // fail too instead of computing on inputs it never produced.
        if (!queue_.failed()) {
          event.signal(value);
          return Status();
        }
        Status why(ErrorCode::kOutOfMemory, std::string());  // if even the copy fails
        try {
          why = queue_.kept_error();
        } catch (const std::bad_alloc&) {
        }
        event.signal_failed(value, why);
        return Status();
      },
      /*runs_after_error=*/true);
  return {};
}

Status PartitionBackend::wait(backend::Event& event, uint64_t value) {
  queue_.push([this, &event, value](std::stop_token stop) {
    const backend::WaitResult r = event.wait(value, wait_timeout_, stop);
    if (r == backend::WaitResult::kReached) return event.failure_at(value);
    return backend::wait_failure(*device_, event, value, r, wait_timeout_);
  });
  return {};
}

void PartitionBackend::push_copy(void* dst, const void* src, size_t size) {
  if (size == 0) return;
  queue_.push([dst, src, size](std::stop_token) {
    std::memmove(dst, src, size);
    return Status();
  });
}

}  // namespace strata::devices
