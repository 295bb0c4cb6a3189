// A queue on another rank, driven from rank 0.
#pragma once

#include <chrono>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"
#include "devices/work_queue.h"
#include "mpi/wire_graph.h"

namespace strata::mpi {

class RemoteDevice;

/// Work is sent to the rank in order by a queue thread on rank 0; the rank runs it in the same
/// order. A graph's structure is sent once per shape and kept there (up to kGraphs of them);
/// each run sends only the placements that changed since the last run of that shape. Waits
/// hold the queue on rank 0 (nothing is sent past them until the event is reached); signals
/// are raised when the rank reports everything before them done. Copies from another rank go
/// from that rank to this one directly; copies from host memory send the bytes.
class RemoteBackend final : public backend::Backend {
 public:
  RemoteBackend(RemoteDevice& device, std::chrono::nanoseconds wait_timeout);
  ~RemoteBackend() override;

  backend::Device& device() override;
  Status compute_async(const core::Graph& graph) override;
  Status set_async(core::Tensor& t, const void* src, size_t offset, size_t size) override;
  Status get_async(const core::Tensor& t, void* dst, size_t offset, size_t size) override;
  Status copy_async(core::Tensor& dst, const core::Tensor& src) override;
  Status signal(backend::Event& event, uint64_t value) override;
  Status wait(backend::Event& event, uint64_t value) override;
  /// Also reports the first error the rank met since the last synchronize.
  Status synchronize() override;
  /// The rank runs its part of a RankGroup's all-reduce in command order.
  Status all_reduce_async(backend::Collective& group, int member, const core::Tensor& src,
                          core::Tensor& dst) override;

 private:
  struct Shape {
    uint64_t key = 0;
    std::vector<Placement> placements;  // as last sent
    std::list<std::string>::iterator lru;
  };
  static constexpr size_t kGraphs = 32;

  // The rank's buffer and offset of `t`'s bytes, or an error naming the tensor.
  Result<Placement> placement_of(const core::Tensor& t) const;

  RemoteDevice* device_;
  std::chrono::nanoseconds wait_timeout_;
  std::unordered_map<std::string, Shape> shapes_;
  std::list<std::string> lru_;  // most recent first
  devices::WorkQueue queue_;
};

}  // namespace strata::mpi
