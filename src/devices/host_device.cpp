#include "devices/host_device.h"

#include <sched.h>
#include <unistd.h>

#include "backend/host_event.h"
#include "cpu/cpu_backend.h"
#include "cpu/kernels/dispatch.h"

namespace strata::devices {

backend::DeviceMemory HostDevice::memory() const {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long avail = sysconf(_SC_AVPHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  backend::DeviceMemory m;
  if (pages > 0 && page > 0) m.total = static_cast<size_t>(pages) * static_cast<size_t>(page);
  if (avail > 0 && page > 0) m.free = static_cast<size_t>(avail) * static_cast<size_t>(page);
  return m;
}

bool HostDevice::supports_op(const core::Tensor& node) const {
  // Exactly what the CPU kernels accept (types, layouts, parameters), so that the scheduler
  // never gives this device a node that would then fail when computed.
  return cpu::check_node(node).ok();
}

Result<std::unique_ptr<backend::Backend>> HostDevice::make_backend(
    const backend::BackendOptions& options) {
  if (options.n_threads < 1 || options.n_threads > 1024) {
    return error(ErrorCode::kInvalidArgument,
                 "cpu: thread count " + std::to_string(options.n_threads) + " is out of range");
  }
  auto backend = std::make_unique<cpu::CpuBackend>(*this, options.n_threads, options.wait_timeout);
  if (!backend->start_status().ok()) return backend->start_status().with_context("cpu");
  return std::unique_ptr<backend::Backend>(std::move(backend));
}

Result<std::unique_ptr<backend::Event>> HostDevice::make_event() {
  return std::unique_ptr<backend::Event>(std::make_unique<backend::HostEvent>(*this));
}

HostDevice& host_device() {
  static HostDevice instance;
  return instance;
}

int available_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

}  // namespace strata::devices
