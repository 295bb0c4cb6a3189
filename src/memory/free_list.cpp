#include "memory/free_list.h"

#include <algorithm>

namespace strata::memory {

size_t FreeList::allocate(size_t size) {
  size = aligned(std::max<size_t>(size, 1));
  // Best fit among freed blocks keeps fragmentation low for the short-lived activations.
  size_t best = free_.size();
  for (size_t i = 0; i < free_.size(); ++i) {
    if (free_[i].size >= size && (best == free_.size() || free_[i].size < free_[best].size))
      best = i;
  }
  if (best != free_.size()) {
    const size_t offset = free_[best].offset;
    free_[best].offset += size;
    free_[best].size -= size;
    if (free_[best].size == 0) free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(best));
    return offset;
  }
  // release() never leaves a free block touching end_, so growing means appending.
  const size_t offset = end_;
  end_ = offset + size;
  peak_ = std::max(peak_, end_);
  return offset;
}

void FreeList::release(size_t offset, size_t size) {
  size = aligned(std::max<size_t>(size, 1));
  auto it = std::lower_bound(free_.begin(), free_.end(), offset,
                             [](const Block& b, size_t o) { return b.offset < o; });
  it = free_.insert(it, Block{offset, size});
  // Merge with the following block, then the preceding one.
  auto next = it + 1;
  if (next != free_.end() && it->offset + it->size == next->offset) {
    it->size += next->size;
    free_.erase(next);
  }
  if (it != free_.begin()) {
    auto prev = it - 1;
    if (prev->offset + prev->size == it->offset) {
      prev->size += it->size;
      free_.erase(it);
      it = prev;
    }
  }
  if (it->offset + it->size == end_) {
    end_ = it->offset;
    free_.erase(it);
  }
}

}  // namespace strata::memory
