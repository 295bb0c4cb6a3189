#include "backend/host_event.h"

namespace strata::backend {

void HostEvent::signal(uint64_t v) {
  uint64_t cur = value_.load(std::memory_order_relaxed);
  // Release: the signalling thread's earlier writes travel with the new value.
  while (cur < v && !value_.compare_exchange_weak(cur, v, std::memory_order_release,
                                                  std::memory_order_relaxed)) {
  }
  if (cur >= v) return;
  // A waiter checks the value and goes to sleep while holding the mutex; taking it here
  // means a waiter either saw the new value or is asleep and gets this notification.
  { std::lock_guard<std::mutex> lock(mutex_); }
  changed_.notify_all();
}

WaitResult HostEvent::wait(uint64_t v, std::chrono::nanoseconds timeout,
                           std::stop_token stop) const {
  auto reached = [&] { return value_.load(std::memory_order_acquire) >= v; };
  if (reached()) return WaitResult::kReached;
  if (timeout <= std::chrono::nanoseconds::zero()) return WaitResult::kTimedOut;

  using Clock = std::chrono::steady_clock;
  const Clock::time_point now = Clock::now();
  // A deadline past what the clock can represent means no deadline.
  const bool forever = timeout >= std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      Clock::time_point::max() - now);
  std::unique_lock<std::mutex> lock(mutex_);
  if (forever) {
    changed_.wait(lock, stop, reached);
  } else {
    changed_.wait_until(lock, stop, now + timeout, reached);
  }
  if (reached()) return WaitResult::kReached;
  return stop.stop_requested() ? WaitResult::kStopped : WaitResult::kTimedOut;
}

}  // namespace strata::backend
