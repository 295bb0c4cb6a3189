// The event of devices whose queues are host threads (the host CPU, CPU partitions).
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>

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

 private:
  std::atomic<uint64_t> value_{0};
  mutable std::mutex mutex_;
  mutable std::condition_variable_any changed_;
};

}  // namespace strata::backend
