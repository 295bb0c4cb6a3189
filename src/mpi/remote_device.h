// Another rank's CPU as a device of rank 0: "mpi:R".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/device.h"
#include "mpi/protocol.h"
#include "mpi/remote_buffer.h"

namespace strata::mpi {

/// Rank R's cores and memory. Its backends (RemoteBackend) send work there in order; its
/// events live on rank 0 and are raised when the rank reports the work before them done.
/// Kind kRemote; caps async and events, but not host buffers.
class RemoteDevice final : public backend::Device {
 public:
  /// The whole CPU of rank `rank` ("mpi:R").
  RemoteDevice(int rank, const Hello& hello);
  /// Partition `index` of the rank, served by its queue `queue` on `cores` ("mpi:R/part:K"),
  /// with a budget (0: the rank's memory).
  RemoteDevice(int rank, const Hello& hello, int index, int queue, std::vector<int> cores,
               size_t budget);

  std::string_view name() const override { return name_; }
  backend::DeviceKind kind() const override { return backend::DeviceKind::kRemote; }
  /// What the rank reported at start-up, less what rank 0 has allocated there since.
  backend::DeviceMemory memory() const override;
  backend::DeviceCaps caps() const override { return {true, true, false}; }
  memory::BufferType& buffer_type() override { return buffer_type_; }
  /// The same build's CPU kernels as rank 0's.
  bool supports_op(const core::Tensor& node) const override;
  Result<std::unique_ptr<backend::Backend>> make_backend(
      const backend::BackendOptions& options) override;
  Result<std::unique_ptr<backend::Event>> make_event() override;
  /// An MPI communicator over the members' ranks (see RankGroup).
  Result<std::unique_ptr<backend::Collective>> make_collective(
      const std::vector<backend::Device*>& members) override;

  int rank() const { return rank_; }
  /// The rank's queue that runs this device's work (0: the whole CPU).
  int queue() const { return queue_; }
  /// Logical CPUs on the rank's host.
  const std::vector<int>& cores() const { return cores_; }
  size_t budget() const { return budget_; }
  const Hello& hello() const { return hello_; }
  /// A key for a graph this device's rank has not seen.
  uint64_t new_graph_key() { return next_graph_key_++; }

 private:
  int rank_;
  Hello hello_;
  int queue_ = 0;
  std::vector<int> cores_;
  size_t budget_ = 0;
  std::string name_;
  RemoteBufferType buffer_type_;
  std::atomic<uint64_t> next_graph_key_{1};
};

}  // namespace strata::mpi
