// Buffers and buffer types: where tensors' bytes live.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace strata::memory {

class Buffer;

/// How a tensor placed in a sharding buffer (a meta device's) is divided between the devices
/// it spans. Buffers that do not shard ignore it.
struct TensorSplit {
  int axis = -1;  ///< the dimension split; -1: mirrored (whole on every device)
  /// A fused tensor's parts along the axis, each divided on its own (QKV: n_embd_q, n_embd_kv,
  /// n_embd_kv); empty: one part.
  std::vector<int64_t> segments;
  /// The unit kept whole along the axis. With segments, every segment is cut into the same
  /// number of units: the largest count that divides each segment's length / granule.
  int64_t granule = 1;
};

/// A kind of memory a device offers: its alignment, size limit, and whether the host can
/// address it directly. Allocation can fail; that is an error value, never an abort.
class BufferType {
 public:
  virtual ~BufferType() = default;
  virtual std::string_view name() const = 0;
  virtual size_t alignment() const = 0;
  /// Largest single allocation (SIZE_MAX when unbounded).
  virtual size_t max_size() const { return SIZE_MAX; }
  /// Bytes still allocatable in all (SIZE_MAX when only the system limits it).
  virtual size_t free_bytes() const { return SIZE_MAX; }
  /// True when buffer memory can be read and written through plain pointers.
  virtual bool is_host() const = 0;
  /// One allocation of at least `size` bytes, or kOutOfMemory naming the size.
  virtual Result<std::unique_ptr<Buffer>> allocate(size_t size) = 0;
};

/// One allocation. Tensors are placed at offsets inside it.
class Buffer {
 public:
  Buffer(BufferType* type, void* base, size_t size) : type_(type), base_(base), size_(size) {}
  virtual ~Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  /// The type it came from; null for wrapped external memory.
  BufferType* type() const { return type_; }
  void* base() const { return base_; }
  size_t size() const { return size_; }
  bool is_host() const { return type_ == nullptr || type_->is_host(); }

  /// Places `t` (a non-view tensor) at `offset`, checking it fits.
  Status place(core::Tensor& t, size_t offset);
  /// Places `t` with how it divides between devices; a buffer that does not shard ignores
  /// the split (the default).
  virtual Status place_split(core::Tensor& t, size_t offset, const TensorSplit& split);
  /// Sets every byte of the tensors placed in it to zero.
  virtual void zero();
  /// Copies bytes into a placed tensor (host memory: memcpy).
  virtual Status write(core::Tensor& t, const void* src, size_t offset, size_t size);
  /// Where write() puts a placed tensor's bytes, for writers that produce them in place (a
  /// conversion at load): t.data in host memory; null where writes go elsewhere (another
  /// device or process, shards).
  virtual void* writable_data(const core::Tensor& t) { return is_host() ? t.data : nullptr; }
  /// Copies bytes out of a placed tensor.
  virtual Status read(const core::Tensor& t, void* dst, size_t offset, size_t size) const;
  /// One run of write_runs: `size` bytes from `src + from` into the tensor at byte `to`.
  struct Run {
    size_t from = 0, to = 0, size = 0;
  };
  /// Writes every run (a shard's pieces of a whole tensor). The default writes them one by
  /// one; memory of another process takes them as one request.
  virtual Status write_runs(core::Tensor& t, const void* src, std::span<const Run> runs);

 private:
  BufferType* type_;
  void* base_;
  size_t size_;
};

/// Page-aligned host memory from the OS allocator.
class HostBufferType final : public BufferType {
 public:
  std::string_view name() const override { return "host"; }
  size_t alignment() const override { return 64; }
  bool is_host() const override { return true; }
  Result<std::unique_ptr<Buffer>> allocate(size_t size) override;
};

/// The process-wide host buffer type.
HostBufferType& host_buffer_type();

/// A buffer over memory someone else owns (a read-only file mapping, a caller's array).
/// Valid while that memory lives.
std::unique_ptr<Buffer> wrap_host_memory(void* base, size_t size);

/// Resolves a view's address from its (placed) storage tensor.
Status place_view(core::Tensor& view);

/// Human-readable byte count ("812 MiB").
std::string format_bytes(size_t bytes);

}  // namespace strata::memory
