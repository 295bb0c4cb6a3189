// Host memory backed by transparent huge pages, for tensors read in long streams (weights).
#pragma once

#include "memory/buffer.h"

namespace strata::memory {

/// Anonymous host memory in 2 MiB-aligned mappings that the kernel is asked to back with
/// transparent huge pages (madvise(MADV_HUGEPAGE)). Decode streams every weight once per
/// token; with 2 MiB pages a stream crosses a page (and misses the TLB) 512x less often than
/// with the 4 KiB pages of the page cache, and the hardware prefetchers run further ahead.
/// Where the kernel declines huge pages the memory is still ordinary, correct host memory.
class HugePageBufferType final : public BufferType {
 public:
  std::string_view name() const override { return "host-huge"; }
  size_t alignment() const override { return 64; }
  bool is_host() const override { return true; }
  /// One mapping of `size` rounded up to 2 MiB; kOutOfMemory when the OS refuses it.
  Result<std::unique_ptr<Buffer>> allocate(size_t size) override;
};

/// The process-wide huge-page host buffer type.
HugePageBufferType& huge_page_buffer_type();

/// True when the running kernel can back an madvise(MADV_HUGEPAGE) region with transparent
/// huge pages (THP mode "always" or "madvise"); false on other systems.
bool huge_pages_supported();

/// True when copying `bytes` of file-backed weights into huge pages is worth it: huge pages
/// are supported and the copy fits in well under half of the memory now available, so a
/// model near the size of RAM keeps using the file mapping (no second copy, pages reclaimable).
bool copy_to_huge_pages_pays(size_t bytes);

}  // namespace strata::memory
