#include "cpu/thread_pool.h"

#include <algorithm>
#include <string>
#include <system_error>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace strata::cpu {
namespace {

// Spinning keeps the hand-off between nodes of a graph (and between back-to-back graphs) in
// the microsecond range; after that a waiter yields, then sleeps, so an oversubscribed or
// idle machine is not kept busy. The counts bound a spin to well under a millisecond.
constexpr int kPauseSpins = 2048;
constexpr int kYieldSpins = 16;

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Returns the value of `a` once it differs from `old`, with acquire ordering. `idle` runs
// between polls of the first, spinning phase.
uint32_t wait_for_change(const std::atomic<uint32_t>& a, uint32_t old,
                         const ThreadPool::IdleWork& idle = {}) {
  uint32_t v = a.load(std::memory_order_acquire);
  bool busy = idle.step != nullptr;
  for (int i = 0; i < kPauseSpins && v == old; ++i) {
    if (busy) {
      busy = idle.step(idle.ctx);
    } else {
      cpu_relax();
    }
    v = a.load(std::memory_order_acquire);
  }
  for (int i = 0; i < kYieldSpins && v == old; ++i) {
    std::this_thread::yield();
    v = a.load(std::memory_order_acquire);
  }
  while (v == old) {
    a.wait(old, std::memory_order_acquire);
    v = a.load(std::memory_order_acquire);
  }
  return v;
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  // Thread creation and the vector's allocation throw; a constructor can only report through
  // the pool's state, and the caller checks start_status() before use.
  try {
    workers_.reserve(static_cast<size_t>(n_threads_ - 1));
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
  } catch (const std::exception& e) {
    start_status_ =
        error(ErrorCode::kOutOfMemory,
              "cannot start worker thread " + std::to_string(workers_.size() + 1) + " of " +
                  std::to_string(n_threads_ - 1) + ": " + e.what() + " (use fewer threads: -t)");
    stop_workers();
    n_threads_ = 1;
  }
}

ThreadPool::~ThreadPool() {
  stop_workers();
}

void ThreadPool::stop_workers() {
  stop_.store(true, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void ThreadPool::run(const std::function<void(int ith, int nth)>& fn) {
  std::lock_guard<std::mutex> lock(run_mutex_);
  if (workers_.empty()) {
    fn(0, 1);
    return;
  }
  // job_ and pending_ are published by the release increment of generation_.
  job_ = &fn;
  pending_.store(static_cast<uint32_t>(n_threads_ - 1), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();

  fn(0, n_threads_);

  uint32_t left = pending_.load(std::memory_order_acquire);
  while (left != 0) left = wait_for_change(pending_, left);
  job_ = nullptr;
}

void ThreadPool::worker_loop(int ith) {
  uint32_t seen = 0;
  for (;;) {
    seen = wait_for_change(generation_, seen);
    if (stop_.load(std::memory_order_relaxed)) return;
    (*job_)(ith, n_threads_);
    // The last worker out wakes the caller; the others only count down.
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_all();
  }
}

void ThreadPool::barrier() {
  barrier(IdleWork{});
}

void ThreadPool::barrier(const IdleWork& idle) {
  if (n_threads_ == 1) return;
  // Read the phase before arriving: it cannot advance until this thread has arrived.
  const uint32_t phase = phase_.load(std::memory_order_relaxed);
  const uint32_t n = static_cast<uint32_t>(n_threads_);
  // acq_rel: the last arriver acquires every other participant's writes through the chain
  // of read-modify-writes, then publishes them all with the release increment of phase_.
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) == n - 1) {
    arrived_.store(0, std::memory_order_relaxed);
    phase_.fetch_add(1, std::memory_order_release);
    phase_.notify_all();
    return;
  }
  wait_for_change(phase_, phase, idle);
}

}  // namespace strata::cpu
