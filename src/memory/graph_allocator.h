// Places a graph's compute tensors in one buffer, reusing memory by liveness.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "core/graph.h"
#include "core/status.h"
#include "memory/buffer.h"

namespace strata::memory {

/// Assigns every unplaced tensor of a graph (nodes and input leafs, never views) an offset in
/// a single buffer of `type`. A tensor's memory is reused once its last consumer has run;
/// elementwise ops write in place over a dying operand. Views get their address from the
/// tensor they view. Outputs are never overwritten.
class GraphAllocator {
 public:
  explicit GraphAllocator(BufferType& type) : type_(&type) {}

  /// Which unplaced tensors this allocator places (a scheduler gives each backend its own);
  /// the rest are left alone but still count as readers for liveness.
  using Owns = std::function<bool(const core::Tensor&)>;

  /// Sizes the buffer for `graph` (typically the largest graph the caller will run) without
  /// placing anything, so later allocate() calls need no reallocation.
  Status reserve(const core::Graph& graph, const Owns& owns = {});
  /// Places `graph`'s tensors, growing the buffer first if this graph needs more. Views whose
  /// storage is placed get their address; views of tensors still unplaced are left for later.
  Status allocate(core::Graph& graph, const Owns& owns = {});
  /// Bytes `graph` needs (what allocate() would grow the buffer to), without placing anything.
  size_t required(const core::Graph& graph, const Owns& owns = {}) const;
  /// Current buffer size in bytes (0 before the first reserve/allocate).
  size_t buffer_size() const { return buffer_ ? buffer_->size() : 0; }
  /// The buffer tensors are placed in (null before the first reserve/allocate).
  const Buffer* buffer() const { return buffer_.get(); }
  /// Counts buffer replacements: tensors placed before a change point into freed memory.
  uint64_t generation() const { return generation_; }

 private:
  Status ensure_capacity(size_t bytes);

  BufferType* type_;
  std::unique_ptr<Buffer> buffer_;
  uint64_t generation_ = 0;
};

}  // namespace strata::memory
