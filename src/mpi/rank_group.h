// Ranks that all-reduce together: the tensor split's sums over MPI ranks as one collective.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/collective.h"
#include "backend/device.h"

namespace strata::mpi {

/// An MPI communicator over the ranks of some devices (mpi:0 and RemoteDevices), made on
/// every one of those ranks. Rank 0's own member runs its part in its queue thread
/// (all_reduce_here); a RemoteDevice's backend has its rank run it in command order.
class RankGroup final : public backend::Collective {
 public:
  /// kUnsupported when a member is not an MPI rank's device or two share a rank.
  static Result<std::unique_ptr<RankGroup>> create(const std::vector<backend::Device*>& members);
  ~RankGroup() override;

  Status all_reduce_here(int member, const core::Tensor& src, core::Tensor& dst) override;

  uint64_t id() const { return id_; }

 private:
  RankGroup(uint64_t id, std::vector<int> ranks) : id_(id), ranks_(std::move(ranks)) {}
  uint64_t id_;
  std::vector<int> ranks_;  // world rank of each member
};

/// The checks both ends make: F32, contiguous, the same number of elements.
Status check_all_reduce(const core::Tensor& src, const core::Tensor& dst);

}  // namespace strata::mpi
