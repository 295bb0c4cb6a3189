#include "memory/huge_page_buffer.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace strata::memory {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

#if defined(__linux__)

// Owns [base, base + size), a whole mapping of its own.
class MappedBuffer final : public Buffer {
 public:
  MappedBuffer(BufferType* type, void* base, size_t size) : Buffer(type, base, size) {}
  ~MappedBuffer() override { munmap(base(), size()); }
};

// mmap aligns to 4 KiB only: map one huge page more than needed and unmap the unaligned head
// and the tail, so the buffer starts on a 2 MiB boundary and every 2 MiB of it can be one page.
void* map_aligned(size_t rounded) {
  const size_t span = rounded + kHugePage;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  const size_t head = aligned - start;
  if (head != 0) munmap(raw, head);
  const size_t tail = span - head - rounded;
  if (tail != 0) munmap(reinterpret_cast<void*>(aligned + rounded), tail);
  return reinterpret_cast<void*>(aligned);
}

#endif  // __linux__

}  // namespace

Result<std::unique_ptr<Buffer>> HugePageBufferType::allocate(size_t size) {
  if (size > SIZE_MAX - 2 * kHugePage) {
    return error(ErrorCode::kOutOfMemory, "host-huge: cannot allocate " + format_bytes(size));
  }
  const size_t rounded = (std::max<size_t>(size, 1) + kHugePage - 1) / kHugePage * kHugePage;
#if defined(__linux__)
  void* p = map_aligned(rounded);
  if (p == nullptr) {
    return error(ErrorCode::kOutOfMemory,
                 "host-huge: allocation of " + format_bytes(size) + " failed");
  }
  // Advice only: a kernel that declines leaves ordinary pages, which are just as correct.
  madvise(p, rounded, MADV_HUGEPAGE);
  try {
    return std::unique_ptr<Buffer>(new MappedBuffer(this, p, rounded));
  } catch (const std::bad_alloc&) {
    munmap(p, rounded);  // the mapping is not leaked when its owner cannot be made
    return error(ErrorCode::kOutOfMemory, "host-huge: out of memory");
  }
#else
  // No huge-page advice off Linux: plain host memory keeps callers working.
  auto buf = host_buffer_type().allocate(rounded);
  if (!buf.ok()) return buf.status();
  return buf;
#endif
}

HugePageBufferType& huge_page_buffer_type() {
  static HugePageBufferType instance;
  return instance;
}

bool huge_pages_supported() {
#if defined(__linux__)
  static const bool supported = [] {
    std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string mode;
    std::getline(f, mode);
    return mode.find("[always]") != std::string::npos ||
           mode.find("[madvise]") != std::string::npos;
  }();
  return supported;
#else
  return false;
#endif
}

bool copy_to_huge_pages_pays(size_t bytes) {
  if (!huge_pages_supported()) return false;
  const long avail = sysconf(_SC_AVPHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  if (avail <= 0 || page <= 0) return false;
  return bytes < static_cast<size_t>(avail) / 2 * static_cast<size_t>(page);
}

}  // namespace strata::memory
