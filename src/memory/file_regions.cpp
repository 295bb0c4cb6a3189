#include "memory/file_regions.h"

#include <cstdint>
#include <map>
#include <mutex>

namespace strata::memory {
namespace {

struct Region {
  size_t size = 0;
  std::string path;
};

struct Regions {
  std::mutex mutex;
  std::map<uintptr_t, Region> by_base;
};

Regions& regions() {
  static Regions r;
  return r;
}

}  // namespace

void remember_file_mapping(const void* base, size_t size, const std::string& path) {
  if (base == nullptr || size == 0) return;
  Regions& r = regions();
  std::lock_guard lock(r.mutex);
  r.by_base[reinterpret_cast<uintptr_t>(base)] = Region{size, path};
}

void forget_file_mapping(const void* base) {
  Regions& r = regions();
  std::lock_guard lock(r.mutex);
  r.by_base.erase(reinterpret_cast<uintptr_t>(base));
}

std::optional<FileSpot> find_file_spot(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  Regions& r = regions();
  std::lock_guard lock(r.mutex);
  auto it = r.by_base.upper_bound(a);
  if (it == r.by_base.begin()) return std::nullopt;
  --it;
  const size_t offset = a - it->first;
  if (offset >= it->second.size) return std::nullopt;
  return FileSpot{it->second.path, offset, it->second.size - offset};
}

}  // namespace strata::memory
