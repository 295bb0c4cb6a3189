// A meta device: N devices that look like one, each holding a slice of every layer (tensor
// parallelism). See DESIGN.md, "Meta device".
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/device.h"
#include "meta/meta_buffer.h"
#include "meta/sharded.h"

namespace strata::meta {

/// Bytes one member holds for the meta device.
struct MemberBytes {
  size_t sharded = 0;  ///< shards of weights and KV cache placed with a split
  size_t compute = 0;  ///< its compute buffer for the meta device's graphs
};

/// Wraps member devices with asynchronous queues and events: partitions, whose memory the host
/// addresses, or devices of other processes (MPI ranks), whose memory it does not; the
/// expansion then copies what such a member reads or writes elsewhere (see expansion.cpp).
/// Weights and KV cache placed in its buffers are split among the members as their
/// memory::TensorSplit says, in proportion to `weights`; its backend runs each graph as one
/// sub-graph per member, propagating split states op by op and summing partial results
/// between the members' queues (see MetaBackend).
class MetaDevice final : public backend::Device {
 public:
  /// kInvalidArgument for fewer than two members, a member that lacks an asynchronous queue or
  /// events, a first member whose memory the host cannot address, or weights that are not one
  /// positive number per member.
  static Result<std::unique_ptr<MetaDevice>> create(std::vector<backend::Device*> members,
                                                    std::vector<float> weights);

  std::string_view name() const override { return name_; }
  backend::DeviceKind kind() const override { return backend::DeviceKind::kMeta; }
  backend::DeviceMemory memory() const override;
  backend::DeviceCaps caps() const override { return {true, true, true}; }
  memory::BufferType& buffer_type() override { return buffer_type_; }
  /// Every op the members run, except those with no split rule (argmax, top_k, sum_rows),
  /// which the scheduler then gives to the host.
  bool supports_op(const core::Tensor& node) const override;
  Result<std::unique_ptr<backend::Backend>> make_backend(
      const backend::BackendOptions& options) override;
  Result<std::unique_ptr<backend::Event>> make_event() override;

  const std::vector<backend::Device*>& members() const { return members_; }
  std::span<const float> weights() const { return weights_; }
  int size() const { return static_cast<int>(members_.size()); }

  /// The shards of a tensor placed with a split, or null.
  const Sharded* find(const core::Tensor* t) const;
  /// What each member holds.
  std::vector<MemberBytes> member_bytes() const;
  /// Per member, the bytes of `t`'s shard (0 for a tensor that is not sharded here).
  std::vector<size_t> shard_bytes(const core::Tensor& t) const;
  /// The members' all-reduce group, where a member that does not share this process's memory
  /// made one (MPI ranks); null otherwise, and the members then sum each other's partials.
  backend::Collective* collective() const { return collective_.get(); }

 private:
  friend class MetaBuffer;
  friend class MetaBackend;
  MetaDevice(std::vector<backend::Device*> members, std::vector<float> weights);
  void add(const core::Tensor* t, Sharded s);
  void remove(const core::Tensor* t);
  void add_compute_bytes(int member, long long delta);

  std::vector<backend::Device*> members_;
  std::vector<float> weights_;
  std::string name_;
  MetaBufferType buffer_type_;
  mutable std::mutex mutex_;
  std::unordered_map<const core::Tensor*, Sharded> sharded_;
  std::vector<long long> compute_bytes_;
  std::unique_ptr<backend::Collective> collective_;
};

}  // namespace strata::meta
