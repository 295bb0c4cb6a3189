#include "devices/partition_device.h"

#include <system_error>
#include <utility>

#include "backend/host_event.h"
#include "devices/cpu_topology.h"
#include "devices/host_device.h"
#include "devices/partition_backend.h"

namespace strata::devices {

PartitionDevice::PartitionDevice(PartitionSpec spec)
    : spec_(std::move(spec)),
      name_(spec_.name.empty() ? "part:" + std::to_string(spec_.index) : spec_.name),
      buffer_type_(name_, spec_.budget, spec_.numa_node) {}

PartitionDevice::~PartitionDevice() = default;

backend::DeviceMemory PartitionDevice::memory() const {
  if (spec_.budget == 0) return numa_node_memory(spec_.numa_node);
  const size_t used = buffer_type_.in_use();
  return {used < spec_.budget ? spec_.budget - used : 0, spec_.budget};
}

bool PartitionDevice::supports_op(const core::Tensor& node) const {
  // The same CPU kernels as the host's.
  return host_device().supports_op(node);
}

Result<std::unique_ptr<backend::Backend>> PartitionDevice::make_backend(
    const backend::BackendOptions& options) {
  return out_of_memory_as_error(name_.c_str(), [&]() -> Result<std::unique_ptr<backend::Backend>> {
    const int queue_core = spec_.cores.empty() ? -1 : spec_.cores[0];
    auto pool = team();
    if (!pool.ok()) return pool.status();
    // The backend's queue thread is started by its constructor, which can only throw.
    try {
      return std::unique_ptr<backend::Backend>(
          new PartitionBackend(*this, **pool, queue_core, options.wait_timeout));
    } catch (const std::system_error& e) {
      return error(ErrorCode::kOutOfMemory, name_ + ": cannot start the queue thread: " + e.what());
    }
  });
}

Result<std::unique_ptr<backend::Event>> PartitionDevice::make_event() {
  return std::unique_ptr<backend::Event>(std::make_unique<backend::HostEvent>(*this));
}

Result<cpu::ThreadPool*> PartitionDevice::team() {
  std::lock_guard<std::mutex> lock(team_mutex_);
  if (!team_) {
    const int n = spec_.cores.empty() ? 1 : static_cast<int>(spec_.cores.size());
    auto pool = std::make_unique<cpu::ThreadPool>(n);
    // A team that could not start is not kept: the next make_backend tries again.
    if (!pool->start_status().ok()) return pool->start_status().with_context(name_);
    // Participant i > 0 of every run is the same worker thread, so pinning it once in a run
    // pins it for good; participant 0 is the calling queue thread, which pins itself.
    pool->run([this](int ith, int) {
      if (ith == 0) return;
      const int cores[] = {spec_.cores[static_cast<size_t>(ith)]};
      (void)pin_current_thread(cores);
    });
    team_ = std::move(pool);
  }
  return team_.get();
}

}  // namespace strata::devices
