#include "devices/budget_buffer_type.h"

#include <algorithm>
#include <utility>

#include "devices/cpu_topology.h"

namespace strata::devices {

constexpr size_t kPageSize = 4096;

class BudgetBuffer final : public memory::Buffer {
 public:
  BudgetBuffer(BudgetBufferType* type, void* base, size_t size, int numa_node)
      : Buffer(type, base, size), owner_(type), numa_node_(numa_node) {}
  ~BudgetBuffer() override {
    free_pages(base(), size(), numa_node_);
    owner_->release(size());
  }

 private:
  BudgetBufferType* owner_;
  int numa_node_;
};

BudgetBufferType::BudgetBufferType(std::string name, size_t budget, int numa_node)
    : name_(std::move(name)), budget_(budget), numa_node_(numa_node) {}

Result<std::unique_ptr<memory::Buffer>> BudgetBufferType::allocate(size_t size) {
  const std::string what = name_ + ": cannot allocate " + memory::format_bytes(size);
  if (size > SIZE_MAX - kPageSize) return error(ErrorCode::kOutOfMemory, what);
  const size_t rounded = (std::max<size_t>(size, 1) + kPageSize - 1) / kPageSize * kPageSize;

  // Reserve the bytes first, so concurrent allocations cannot overshoot the budget together.
  size_t used = in_use_.load(std::memory_order_relaxed);
  do {
    if (budget_ != 0 && (rounded > budget_ || used > budget_ - rounded)) {
      return error(ErrorCode::kOutOfMemory, what + ": " + memory::format_bytes(used) + " of " +
                                                memory::format_bytes(budget_) + " budget in use");
    }
  } while (!in_use_.compare_exchange_weak(used, used + rounded, std::memory_order_relaxed));

  void* p = allocate_pages(rounded, numa_node_);
  if (p == nullptr) {
    release(rounded);
    return error(ErrorCode::kOutOfMemory, what + ": the OS refused");
  }
  try {
    return std::unique_ptr<memory::Buffer>(new BudgetBuffer(this, p, rounded, numa_node_));
  } catch (const std::bad_alloc&) {
    // The pages and the budget are given back when their owner cannot be made.
    free_pages(p, rounded, numa_node_);
    release(rounded);
    return error(ErrorCode::kOutOfMemory, what + ": out of memory");
  }
}

}  // namespace strata::devices
