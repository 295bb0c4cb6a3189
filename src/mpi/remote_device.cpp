#include "mpi/remote_device.h"

#include <algorithm>
#include <system_error>
#include <utility>

#include "backend/host_event.h"
#include "devices/host_device.h"
#include "mpi/rank_group.h"
#include "mpi/remote_backend.h"

namespace strata::mpi {

RemoteDevice::RemoteDevice(int rank, const Hello& hello)
    : rank_(rank),
      hello_(hello),
      cores_(hello.cpus, hello.cpus + std::min(hello.cores, Hello::kMaxCpus)),
      name_("mpi:" + std::to_string(rank)),
      buffer_type_(rank, name_, hello.memory_free, 0) {}

RemoteDevice::RemoteDevice(int rank, const Hello& hello, int index, int queue,
                           std::vector<int> cores, size_t budget)
    : rank_(rank),
      hello_(hello),
      queue_(queue),
      cores_(std::move(cores)),
      budget_(budget),
      name_("mpi:" + std::to_string(rank) + "/part:" + std::to_string(index)),
      buffer_type_(rank, name_, hello.memory_free, budget) {}

backend::DeviceMemory RemoteDevice::memory() const {
  return {buffer_type_.free_bytes(), budget_ != 0 ? budget_ : hello_.memory_total};
}

bool RemoteDevice::supports_op(const core::Tensor& node) const {
  return devices::host_device().supports_op(node);
}

Result<std::unique_ptr<backend::Backend>> RemoteDevice::make_backend(
    const backend::BackendOptions& options) {
  try {
    return std::unique_ptr<backend::Backend>(new RemoteBackend(*this, options.wait_timeout));
  } catch (const std::system_error& e) {
    return error(ErrorCode::kOutOfMemory, name_ + ": cannot start the queue thread: " + e.what());
  }
}

Result<std::unique_ptr<backend::Collective>> RemoteDevice::make_collective(
    const std::vector<backend::Device*>& members) {
  auto g = RankGroup::create(members);
  if (!g.ok()) return g.status();
  return std::unique_ptr<backend::Collective>(std::move(g).value());
}

Result<std::unique_ptr<backend::Event>> RemoteDevice::make_event() {
  return std::unique_ptr<backend::Event>(std::make_unique<backend::HostEvent>(*this));
}

}  // namespace strata::mpi
