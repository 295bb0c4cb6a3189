// Another rank's CPU as a device of rank 0: "mpi:R".
#pragma once

#include <memory>
#include <string>

#include "backend/device.h"
#include "mpi/protocol.h"
#include "mpi/remote_buffer.h"

namespace strata::mpi {

/// Rank R's cores and memory. Its backends (RemoteBackend) send work there in order; its
/// events live on rank 0 and are raised when the rank reports the work before them done.
/// Kind kRemote; caps async and events, but not host buffers.
class RemoteDevice final : public backend::Device {
 public:
  RemoteDevice(int rank, const Hello& hello);

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
  const Hello& hello() const { return hello_; }
  /// A key for a graph this device's rank has not seen.
  uint64_t new_graph_key() { return next_graph_key_++; }

 private:
  int rank_;
  Hello hello_;
  std::string name_;
  RemoteBufferType buffer_type_;
  std::atomic<uint64_t> next_graph_key_{1};
};

}  // namespace strata::mpi
