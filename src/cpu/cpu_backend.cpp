#include "cpu/cpu_backend.h"

#include <cstring>
#include <string>

#include "backend/checks.h"
#include "cpu/graph_compute.h"

namespace strata::cpu {

CpuBackend::CpuBackend(backend::Device& device, int n_threads,
                       std::chrono::nanoseconds wait_timeout)
    : device_(&device), wait_timeout_(wait_timeout), pool_(n_threads) {}

Status CpuBackend::compute_async(const core::Graph& graph) {
  return compute_graph(graph, pool_, scratch_);
}

Status CpuBackend::set_async(core::Tensor& t, const void* src, size_t offset, size_t size) {
  STRATA_RETURN_IF_ERROR(backend::check_tensor_range(t, offset, size));
  std::memcpy(static_cast<uint8_t*>(t.data) + offset, src, size);
  return {};
}

Status CpuBackend::get_async(const core::Tensor& t, void* dst, size_t offset, size_t size) {
  STRATA_RETURN_IF_ERROR(backend::check_tensor_range(t, offset, size));
  std::memcpy(dst, static_cast<const uint8_t*>(t.data) + offset, size);
  return {};
}

Status CpuBackend::copy_async(core::Tensor& dst, const core::Tensor& src) {
  STRATA_RETURN_IF_ERROR(backend::check_host_copy(dst, src));
  return backend::copy_to_host(dst, src);
}

Status CpuBackend::signal(backend::Event& event, uint64_t value) {
  STRATA_RETURN_IF_ERROR(backend::check_event_owner(*device_, event));
  event.signal(value);
  return {};
}

Status CpuBackend::wait(backend::Event& event, uint64_t value) {
  const backend::WaitResult r = event.wait(value, wait_timeout_);
  if (r == backend::WaitResult::kReached) return event.failure_at(value);
  return backend::wait_failure(*device_, event, value, r, wait_timeout_);
}

}  // namespace strata::cpu
