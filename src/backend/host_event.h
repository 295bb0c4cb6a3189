// The event of devices whose queues are host threads (the host CPU, CPU partitions).
#pragma once

#include <array>
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
  /// Keeps the failure for the values (before, v] it raised the timeline through, beside the
  /// earlier ones: a waiter for an earlier failed value may wake only after later signals.
  void signal_failed(uint64_t v, const Status& why) override;
  Status failure_at(uint64_t v) const override;

 private:
  std::atomic<uint64_t> value_{0};
  /// Values (after, through] raised by a failed signal.
  struct FailedRange {
    uint64_t after = 0;
    uint64_t through = 0;
    Status why;
  };
  /// The most recent failed ranges, oldest first. Consecutive failures share a range; when
  /// all are taken the two oldest merge, so an ancient good value between them may read as
  /// failed (never a failed one as good).
  static constexpr size_t kRanges = 8;
  std::atomic<bool> ever_failed_{false};     // lets failure_at() skip the lock on good runs
  std::array<FailedRange, kRanges> failed_;  // guarded by mutex_, with n_failed_
  size_t n_failed_ = 0;
  mutable std::mutex mutex_;
  mutable std::condition_variable_any changed_;
};

}  // namespace strata::backend
