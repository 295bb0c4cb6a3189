// Best-fit offset allocator over a virtual address range; tracks the high-water mark.
#pragma once

#include <cstddef>
#include <vector>

namespace strata::memory {

/// Hands out aligned offsets in [0, infinity) and remembers the peak, so a planning pass can
/// size a buffer before it exists. Freed blocks merge with free neighbours.
class FreeList {
 public:
  explicit FreeList(size_t alignment) : alignment_(alignment) {}
  size_t allocate(size_t size);
  void release(size_t offset, size_t size);
  /// Highest offset ever handed out plus its size.
  size_t peak() const { return peak_; }

 private:
  struct Block {
    size_t offset;
    size_t size;
  };
  size_t aligned(size_t size) const { return (size + alignment_ - 1) / alignment_ * alignment_; }

  size_t alignment_;
  std::vector<Block> free_;  // sorted by offset, non-adjacent
  size_t end_ = 0;           // everything at or past end_ is free
  size_t peak_ = 0;
};

}  // namespace strata::memory
