// Timeline events: the one synchronization primitive between queues, devices and host threads.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <stop_token>

namespace strata::backend {

class Device;

/// How a host-side Event::wait ended.
enum class WaitResult {
  kReached,   ///< the value reached the target
  kTimedOut,  ///< the timeout passed first
  kStopped,   ///< the stop token was triggered first
};

/// A 64-bit value that only grows, owned by one device. Work queued on a backend signals it
/// (Backend::signal) or waits for it (Backend::wait); host threads do the same directly.
/// Signalling publishes memory: whoever sees value() >= v also sees every write made before
/// the signal that raised it to v. All members may be called from any thread at once.
///
/// Create events with Device::make_event. An event must outlive every queued signal or wait
/// that names it and every host thread blocked in wait().
class Event {
 public:
  /// A wait timeout that never expires.
  static constexpr std::chrono::nanoseconds kForever = std::chrono::nanoseconds::max();

  /// An event at value 0 belonging to `device`; Device::make_event is the usual way in.
  explicit Event(Device& device) : device_(&device) {}
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  /// The device the event was created on: only that device's backends may signal it.
  Device& device() const { return *device_; }
  /// The current value.
  uint64_t value() const { return value_.load(std::memory_order_acquire); }
  /// Raises the value to `v` (a smaller `v` leaves it unchanged) and wakes the waiters it
  /// satisfies.
  void signal(uint64_t v);
  /// Blocks until value() >= v, `timeout` has passed, or `stop` is triggered (checked in that
  /// order: a reached value wins even when the time is up).
  [[nodiscard]] WaitResult wait(uint64_t v, std::chrono::nanoseconds timeout,
                                std::stop_token stop = {}) const;

 private:
  Device* device_;
  std::atomic<uint64_t> value_{0};
  mutable std::mutex mutex_;
  mutable std::condition_variable_any changed_;
};

}  // namespace strata::backend
