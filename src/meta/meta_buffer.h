// The memory of a meta device: an address range of its own, and shards on the members.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/context.h"
#include "memory/buffer.h"
#include "meta/sharded.h"

namespace strata::meta {

class MetaDevice;

/// Allocations are address ranges reserved without committing memory (pages cost memory only
/// once written). Tensors placed with a split (weights, the KV cache) get their bytes on the
/// members, one shard each; their own range is never touched. Tensors placed without one
/// (compute tensors) are whole tensors in the range: the meta device writes there only what
/// is read outside it (results, all-reduced sums), so only those pages are ever committed.
class MetaBufferType final : public memory::BufferType {
 public:
  explicit MetaBufferType(MetaDevice& device) : device_(&device) {}
  std::string_view name() const override;
  size_t alignment() const override { return 64; }
  bool is_host() const override { return true; }
  /// What the members can still hold of tensors split in the device's proportions: the
  /// tightest member's free bytes over its share.
  size_t free_bytes() const override;
  Result<std::unique_ptr<memory::Buffer>> allocate(size_t size) override;

 private:
  MetaDevice* device_;
};

class MetaBuffer final : public memory::Buffer {
 public:
  MetaBuffer(MetaBufferType* type, MetaDevice& device, void* base, size_t size);
  ~MetaBuffer() override;

  /// Places `t` and gives every member its shard (allocated from the member's buffer type).
  /// Like two tensors at one offset of a plain buffer, a tensor placed at the offset of an
  /// earlier one with the same shape, type and split shares its shards' memory (weight slots
  /// rely on it). kInvalidArgument when the split leaves a member no unit or cuts a quantization
  /// block; kOutOfMemory naming the member when its memory is short.
  Status place_split(core::Tensor& t, size_t offset, const memory::TensorSplit& split) override;
  /// Zeroes every shard.
  void zero() override;
  /// A sharded tensor is written and read whole only (offset 0, all bytes): the bytes are
  /// scattered to the shards, or gathered from them.
  Status write(core::Tensor& t, const void* src, size_t offset, size_t size) override;
  Status read(const core::Tensor& t, void* dst, size_t offset, size_t size) const override;
  /// Null: a tensor's bytes go to its shards.
  void* writable_data(const core::Tensor&) override { return nullptr; }
  /// The shards of `t`, if this buffer placed it with a split.
  const Sharded* sharded(const core::Tensor& t) const;

 private:
  /// The shards of an earlier tensor at t's address that t, split as `s`, may share.
  const Sharded* aliased_by(const core::Tensor& t, const Sharded& s) const;

  MetaDevice* device_;
  core::Context shards_;
  std::vector<std::unique_ptr<memory::Buffer>> member_buffers_;
  std::vector<const core::Tensor*> placed_;
};

/// The shards of `t` when a meta buffer placed it with a split (see MetaBuffer::place_split);
/// nullptr for any other tensor.
const Sharded* shards_of(const core::Tensor& t);

}  // namespace strata::meta
