// Memory of another rank, as rank 0 sees it: an address range that stands for a buffer there.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "memory/buffer.h"

namespace strata::mpi {

/// Where an address of a remote range lies.
struct RemoteSpot {
  int rank = 0;
  uint64_t buffer = 0;  ///< the buffer's id on that rank
  uint64_t offset = 0;
};

/// The rank buffer and offset an address stands for; nullopt for any other memory.
std::optional<RemoteSpot> find_remote(const void* p);

/// Rank `r`'s memory. A buffer's base is an address range reserved on rank 0 that no one may
/// touch (any access faults): tensors are placed there as anywhere else, and the backend
/// translates their addresses to the rank's buffer and offset.
class RemoteBufferType final : public memory::BufferType {
 public:
  /// `budget` 0: what the rank had free at start-up is the limit.
  RemoteBufferType(int rank, std::string name, uint64_t memory_free, size_t budget)
      : rank_(rank),
        name_(std::move(name)),
        free_at_start_(budget != 0 ? std::min<uint64_t>(budget, memory_free) : memory_free),
        budget_(budget) {}
  std::string_view name() const override { return name_; }
  size_t alignment() const override { return 64; }
  size_t free_bytes() const override;
  bool is_host() const override { return false; }
  /// kOutOfMemory with the rank's reason when it cannot allocate.
  Result<std::unique_ptr<memory::Buffer>> allocate(size_t size) override;

  int rank() const { return rank_; }
  size_t in_use() const { return in_use_.load(); }

 private:
  friend class RemoteBuffer;
  int rank_;
  std::string name_;
  uint64_t free_at_start_;
  size_t budget_;
  std::atomic<size_t> in_use_{0};
};

/// One buffer on a rank. Writes of bytes that lie in a model file's mapping are read by the
/// rank from its own copy of the file instead of being sent. Writes and zeroing are done when
/// they return (any of the rank's queues may read the bytes next).
class RemoteBuffer final : public memory::Buffer {
 public:
  ~RemoteBuffer() override;
  void zero() override;
  Status write(core::Tensor& t, const void* src, size_t offset, size_t size) override;
  /// Runs whose bytes lie in a model file's mapping are read by the rank in one request.
  Status write_runs(core::Tensor& t, const void* src, std::span<const Run> runs) override;
  Status read(const core::Tensor& t, void* dst, size_t offset, size_t size) const override;
  /// read() by the rank's queue `queue`, after the work queued there before it.
  Status read_on(int queue, const core::Tensor& t, void* dst, size_t offset, size_t size) const;

 private:
  friend class RemoteBufferType;
  RemoteBuffer(RemoteBufferType& type, void* base, size_t size, size_t reserved, uint64_t id)
      : Buffer(&type, base, size), type_(&type), reserved_(reserved), id_(id) {}
  // The rank's offset of byte `offset` of `t`, checked against the tensor.
  Result<uint64_t> where(const core::Tensor& t, size_t offset, size_t size) const;

  RemoteBufferType* type_;
  size_t reserved_;
  uint64_t id_;
};

}  // namespace strata::mpi
