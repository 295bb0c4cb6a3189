// Timeline events: the one synchronization primitive between queues, devices and host threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <stop_token>

#include "core/status.h"

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
///
/// Memory visibility: signalling publishes memory. Whoever sees value() >= v (a host thread
/// through value() or wait(), a queue through Backend::wait) also sees every write made
/// before the signal that raised it to v: by the signalling host thread, or, for a signal
/// queued on a backend, by all work queued on that backend before the signal.
///
/// A device brings its own kind of event (Device::make_event): the host's is HostEvent, a
/// GPU backend's wraps its native event. All members may be called from any thread at once.
/// An event must outlive every queued signal or wait that names it and every host thread
/// blocked in wait().
class Event {
 public:
  /// A wait timeout that never expires.
  static constexpr std::chrono::nanoseconds kForever = std::chrono::nanoseconds::max();

  explicit Event(Device& device) : device_(&device) {}
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  virtual ~Event() = default;

  /// The device the event was created on: only that device's backends may signal it.
  Device& device() const { return *device_; }
  /// The current value.
  virtual uint64_t value() const = 0;
  /// Raises the value to `v` from the host (a smaller `v` leaves it unchanged) and wakes the
  /// waiters it satisfies.
  virtual void signal(uint64_t v) = 0;
  /// Blocks the calling host thread until value() >= v, `timeout` has passed, or `stop` is
  /// triggered (checked in that order: a reached value wins even when the time is up).
  [[nodiscard]] virtual WaitResult wait(uint64_t v, std::chrono::nanoseconds timeout,
                                        std::stop_token stop = {}) const = 0;
  /// Raises the value to `v` like signal(), for a queue whose work failed (`why`): its
  /// signals still fire so nobody waits forever, but a queue released by this raise must not
  /// compute on what the failed work did not produce. failure_at() tells it.
  virtual void signal_failed(uint64_t v, const Status& why) {
    (void)why;
    signal(v);
  }
  /// The failure whose signal_failed() raised the value to (at least) `v`, or OK when good
  /// work reached `v`.
  virtual Status failure_at(uint64_t v) const {
    (void)v;
    return {};
  }

 private:
  Device* device_;
};

}  // namespace strata::backend
