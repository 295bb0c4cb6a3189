#include "new_injection.h"

#include <execinfo.h>
#include <unistd.h>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace strata::testing {
namespace {

std::atomic<bool> g_armed{false};
std::atomic<int64_t> g_calls{0};
std::atomic<int64_t> g_fail_at{-1};
std::atomic<bool> g_failed_nothrow{false};
// Where the failed allocation was made, for a test that wants to say so.
void* g_trace[48];
std::atomic<int> g_trace_depth{0};

// Counts only while armed, so gtest's own allocations between sweeps cost nothing.
bool should_fail() {
  if (!g_armed.load(std::memory_order_relaxed)) return false;
  return g_calls.fetch_add(1, std::memory_order_relaxed) ==
         g_fail_at.load(std::memory_order_relaxed);
}

void* allocate(std::size_t size, std::size_t align, bool nothrow) {
  if (should_fail()) {
    g_trace_depth.store(backtrace(g_trace, 48));
    if (nothrow) g_failed_nothrow.store(true);
    return nullptr;
  }
  if (size == 0) size = 1;
  if (align <= alignof(std::max_align_t)) return std::malloc(size);
  void* p = nullptr;
  return posix_memalign(&p, align, size) == 0 ? p : nullptr;
}

void* allocate_or_throw(std::size_t size, std::size_t align) {
  void* p = allocate(size, align, false);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

void arm_new_failure(int64_t n) {
  g_calls.store(0);
  g_fail_at.store(n);
  g_failed_nothrow.store(false);
  g_trace_depth.store(0);
  static const bool warmed = [] {  // backtrace() loads libgcc on first use: not while armed
    void* frames[2];
    return backtrace(frames, 2) > 0;
  }();
  (void)warmed;
  g_armed.store(true);
}

int64_t disarm_new_failure() {
  g_armed.store(false);
  return g_calls.load();
}

bool failed_a_nothrow_new() {
  return g_failed_nothrow.load();
}

void print_failed_allocation_site() {
  const int depth = g_trace_depth.load();
  if (depth > 0) backtrace_symbols_fd(g_trace, depth, STDERR_FILENO);
}

}  // namespace strata::testing

using strata::testing::allocate;
using strata::testing::allocate_or_throw;

void* operator new(std::size_t n) {
  return allocate_or_throw(n, 0);
}
void* operator new[](std::size_t n) {
  return allocate_or_throw(n, 0);
}
void* operator new(std::size_t n, std::align_val_t a) {
  return allocate_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return allocate_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return allocate(n, 0, true);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return allocate(n, 0, true);
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, static_cast<std::size_t>(a), true);
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, static_cast<std::size_t>(a), true);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  std::free(p);
}
