// Host memory handed out against a byte budget: a partition device's memory.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "memory/buffer.h"

namespace strata::devices {

/// Page-aligned host memory, from one NUMA node when asked. With a budget, an allocation
/// that would take the bytes in use past it fails with kOutOfMemory ("part:1: cannot
/// allocate 812 MiB: 300 MiB of 512 MiB budget in use") and changes nothing; destroying a
/// buffer returns its bytes. Safe to use from several threads. Must outlive its buffers.
class BudgetBufferType final : public memory::BufferType {
 public:
  /// `budget` 0: no budget (only the OS can refuse). `numa_node` -1: any node.
  BudgetBufferType(std::string name, size_t budget, int numa_node);

  std::string_view name() const override { return name_; }
  size_t alignment() const override { return 64; }
  size_t max_size() const override { return budget_ != 0 ? budget_ : SIZE_MAX; }
  bool is_host() const override { return true; }
  size_t free_bytes() const override {
    const size_t used = in_use();
    return budget_ == 0 ? SIZE_MAX : budget_ > used ? budget_ - used : 0;
  }
  Result<std::unique_ptr<memory::Buffer>> allocate(size_t size) override;

  /// The budget in bytes; 0 when there is none.
  size_t budget() const { return budget_; }
  /// Bytes held by live buffers (each rounded up to whole pages).
  size_t in_use() const { return in_use_.load(std::memory_order_relaxed); }

 private:
  friend class BudgetBuffer;
  void release(size_t bytes) { in_use_.fetch_sub(bytes, std::memory_order_relaxed); }

  std::string name_;
  size_t budget_;
  int numa_node_;
  std::atomic<size_t> in_use_{0};
};

}  // namespace strata::devices
