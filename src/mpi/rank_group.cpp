#include "mpi/rank_group.h"

#include <algorithm>
#include <atomic>
#include <string>

#include "mpi/channel.h"
#include "mpi/cluster.h"
#include "mpi/remote_device.h"
#include "mpi/transport.h"

namespace strata::mpi {

Status check_all_reduce(const core::Tensor& src, const core::Tensor& dst) {
  if (src.type != core::Type::kF32 || dst.type != core::Type::kF32 || !src.is_contiguous() ||
      !dst.is_contiguous() || src.nelements() != dst.nelements() || src.data == nullptr ||
      dst.data == nullptr) {
    return error(ErrorCode::kInvalidArgument,
                 "mpi: an all-reduce needs placed, contiguous F32 tensors of one length, not '" +
                     src.name + "' (" + core::describe(src) + ") into '" + dst.name + "' (" +
                     core::describe(dst) + ")");
  }
  return {};
}

Result<std::unique_ptr<RankGroup>> RankGroup::create(const std::vector<backend::Device*>& members) {
  std::vector<int> ranks;
  for (backend::Device* m : members) {
    if (const auto* remote = dynamic_cast<const RemoteDevice*>(m)) {
      ranks.push_back(remote->rank());
    } else if (is_own_device(m)) {
      ranks.push_back(0);
    } else {
      return error(ErrorCode::kUnsupported,
                   std::string(m != nullptr ? m->name() : "?") + " is not an MPI rank's device");
    }
  }
  std::vector<int> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    return error(ErrorCode::kUnsupported, "two members of the group share a rank");
  }
  static std::atomic<uint64_t> next_id{1};
  const uint64_t id = next_id++;
  // The other ranks first: making the communicator waits for every rank of the group.
  Command c;
  c.kind = CommandKind::kMakeGroup;
  c.v[0] = id;
  std::vector<int32_t> wire(ranks.begin(), ranks.end());
  for (int r : ranks) {
    if (r != 0) {
      STRATA_RETURN_IF_ERROR(post(r, c, wire.data(), wire.size() * sizeof(int32_t)));
    }
  }
  if (std::find(ranks.begin(), ranks.end(), 0) != ranks.end()) {
    STRATA_RETURN_IF_ERROR(make_group(id, ranks));
  }
  return std::unique_ptr<RankGroup>(new RankGroup(id, std::move(ranks)));
}

RankGroup::~RankGroup() {
  if (!initialized()) return;  // MPI has ended, and every communicator with it
  Command c;
  c.kind = CommandKind::kFreeGroup;
  c.v[0] = id_;
  for (int r : ranks_) {
    if (r != 0) (void)post(r, c);
  }
  free_group(id_);
}

Status RankGroup::all_reduce_here(int member, const core::Tensor& src, core::Tensor& dst) {
  if (member < 0 || static_cast<size_t>(member) >= ranks_.size() ||
      ranks_[static_cast<size_t>(member)] != rank()) {
    return error(ErrorCode::kInternal,
                 "mpi: member " + std::to_string(member) + " of the group is not this rank's");
  }
  STRATA_RETURN_IF_ERROR(check_all_reduce(src, dst));
  return all_reduce(id_, static_cast<const float*>(src.data), static_cast<float*>(dst.data),
                    static_cast<size_t>(src.nelements()));
}

}  // namespace strata::mpi
