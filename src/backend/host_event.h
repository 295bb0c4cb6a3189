// The event of devices whose queues are host threads (the host CPU, CPU partitions).
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <new>

#include "backend/event.h"

namespace strata::backend {

/// A timeline in host memory: an atomic value (release on signal, acquire on read) and a
/// condition variable for sleeping waiters.
class HostEvent final : public Event {
 public:
  explicit HostEvent(Device& device) : Event(device) {}

  uint64_t value() const override { return value_.load(std::memory_order_acquire); }
  void signal(uint64_t v) override;
  [[nodiscard]] WaitResult wait(uint64_t v, std::chrono::nanoseconds timeout,
                                std::stop_token stop = {}) const override;
  /// Keeps the latest failure: the values (before, v] it raised the timeline through.
  void signal_failed(uint64_t v, const Status& why) override;
  Status failure_at(uint64_t v) const override;

 private:
  std::atomic<uint64_t> value_{0};
  std::atomic<bool> ever_failed_{false};  // lets failure_at() skip the lock on good runs
  uint64_t failed_after_ = 0;             // guarded by mutex_, with the two below
  uint64_t failed_through_ = 0;
  Status failure_;
  mutable std::mutex mutex_;
  mutable std::condition_variable_any changed_;
};

}  // namespace strata::backend
