// A persistent team of worker threads that runs one function on every thread at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/status.h"

namespace strata::cpu {

/// Threads are created once, in the constructor, and live until the destructor. Between runs
/// the workers spin briefly (so back-to-back runs start fast) and then sleep on a futex-backed
/// wait, so an idle pool costs no CPU time.
class ThreadPool {
 public:
  /// A pool of `n_threads` participants: the calling thread plus n_threads - 1 workers.
  /// Values below 1 are treated as 1. If the OS refuses a thread, the workers already started
  /// are stopped, the pool runs everything on the caller, and start_status() says why.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// Number of participants in a run (workers + the caller).
  int size() const { return n_threads_; }

  /// kOutOfMemory naming the thread the OS refused, if the constructor could not start every
  /// worker; owners turn it into their own error rather than run with fewer threads.
  const Status& start_status() const { return start_status_; }

  /// Calls fn(ith, nth) once on every participant, the calling thread as ith = 0, and returns
  /// when all calls have returned. Runs from different threads are serialized. `fn` must not
  /// throw, and must not call run() on the same pool.
  void run(const std::function<void(int ith, int nth)>& fn);

  /// Blocks until every participant of the current run has reached it; memory written before
  /// the barrier by any participant is visible to all after it. Only valid inside run(), and
  /// every participant must call it the same number of times.
  void barrier();

  /// Something a participant may do while it waits at a barrier: each call does a little
  /// (a few cache lines' prefetch) and returns false once there is nothing left.
  struct IdleWork {
    bool (*step)(void* ctx) = nullptr;
    void* ctx = nullptr;
  };
  /// barrier(), calling idle.step between polls while this participant waits; the barrier
  /// opens without waiting for it.
  void barrier(const IdleWork& idle);

 private:
  void worker_loop(int ith);
  void stop_workers();

  int n_threads_;
  Status start_status_;
  std::vector<std::thread> workers_;
  std::mutex run_mutex_;
  const std::function<void(int, int)>* job_ = nullptr;

  // Each hot atomic on its own cache line: workers poll them while the caller writes others.
  alignas(64) std::atomic<uint32_t> generation_{0};  ///< bumped to start a run (or to stop)
  alignas(64) std::atomic<uint32_t> pending_{0};     ///< workers still inside the current run
  alignas(64) std::atomic<uint32_t> arrived_{0};     ///< participants at the current barrier
  alignas(64) std::atomic<uint32_t> phase_{0};       ///< bumped each time a barrier opens
  std::atomic<bool> stop_{false};
};

}  // namespace strata::cpu
