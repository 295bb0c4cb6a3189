// Timeline events, host side: values only grow, waits end when reached, timed out or stopped,
// and a signal publishes the signaller's writes (run under TSan: -DSTRATA_TSAN=ON).
#include "backend/event.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stop_token>
#include <thread>
#include <vector>

#include "backend/device.h"
#include "backend/host_event.h"

namespace strata::backend {
namespace {

using namespace std::chrono_literals;

// A device that only exists to own events.
class EventOnlyDevice final : public Device {
 public:
  std::string_view name() const override { return "test"; }
  DeviceKind kind() const override { return DeviceKind::kCpu; }
  DeviceMemory memory() const override { return {}; }
  DeviceCaps caps() const override { return {false, true, true}; }
  memory::BufferType& buffer_type() override { return memory::host_buffer_type(); }
  bool supports_op(const core::Tensor&) const override { return false; }
  Result<std::unique_ptr<Backend>> make_backend(const BackendOptions&) override {
    return error(ErrorCode::kUnsupported, "test: no backends");
  }
  Result<std::unique_ptr<Event>> make_event() override {
    return std::unique_ptr<Event>(std::make_unique<HostEvent>(*this));
  }
};

class NoEventDevice final : public Device {
 public:
  std::string_view name() const override { return "plain"; }
  DeviceKind kind() const override { return DeviceKind::kCpu; }
  DeviceMemory memory() const override { return {}; }
  DeviceCaps caps() const override { return {}; }
  memory::BufferType& buffer_type() override { return memory::host_buffer_type(); }
  bool supports_op(const core::Tensor&) const override { return false; }
  Result<std::unique_ptr<Backend>> make_backend(const BackendOptions&) override {
    return error(ErrorCode::kUnsupported, "plain: no backends");
  }
};

TEST(Event, StartsAtZeroAndBelongsToItsDevice) {
  EventOnlyDevice device;
  auto e = device.make_event();
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)->value(), 0u);
  EXPECT_EQ(&(*e)->device(), &device);
}

TEST(Event, DevicesWithoutEventsSayUnsupported) {
  NoEventDevice device;
  auto e = device.make_event();
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(e.status().message(), "plain: device has no events");
}

TEST(Event, ValuesOnlyGrow) {
  EventOnlyDevice device;
  HostEvent e(device);
  e.signal(5);
  EXPECT_EQ(e.value(), 5u);
  e.signal(3);
  EXPECT_EQ(e.value(), 5u);
  e.signal(5);
  EXPECT_EQ(e.value(), 5u);
  e.signal(9);
  EXPECT_EQ(e.value(), 9u);
}

TEST(Event, AFailedSignalMarksOnlyTheValuesItRaised) {
  EventOnlyDevice device;
  HostEvent e(device);
  e.signal(1);
  e.signal_failed(3, error(ErrorCode::kOutOfMemory, "queue failed"));
  EXPECT_EQ(e.value(), 3u);
  EXPECT_TRUE(e.failure_at(1).ok()) << "reached by good work before the failure";
  EXPECT_EQ(e.failure_at(2).code(), ErrorCode::kOutOfMemory);
  EXPECT_EQ(e.failure_at(3).message(), "queue failed");
  e.signal(4);
  EXPECT_TRUE(e.failure_at(4).ok());
  e.signal_failed(4, error(ErrorCode::kInternal, "late"));
  EXPECT_TRUE(e.failure_at(4).ok()) << "a failed signal that raises nothing marks nothing";
}

// A waiter may look at its value only after later signals: the failures before them must still
// be there (a second failed signal once replaced the first one's range, and a late waiter then
// computed from inputs nobody produced).
TEST(Event, EarlierFailuresOutliveLaterSignals) {
  EventOnlyDevice device;
  HostEvent e(device);
  e.signal(1);
  e.signal_failed(2, error(ErrorCode::kOutOfMemory, "first"));
  e.signal_failed(4, error(ErrorCode::kInternal, "second"));
  e.signal(6);
  e.signal_failed(7, error(ErrorCode::kIo, "third"));
  EXPECT_TRUE(e.failure_at(1).ok());
  EXPECT_EQ(e.failure_at(2).message(), "first") << "consecutive failures share one range";
  EXPECT_EQ(e.failure_at(4).message(), "first");
  EXPECT_TRUE(e.failure_at(5).ok()) << "raised by good work between the failures";
  EXPECT_TRUE(e.failure_at(6).ok());
  EXPECT_EQ(e.failure_at(7).message(), "third");
  // Many separate failures: the newest are all kept, the oldest merge (a good value between
  // them may read as failed, a failed one never as good).
  for (uint64_t v = 8; v < 40; v += 2) {
    e.signal(v);
    e.signal_failed(v + 1, error(ErrorCode::kIo, "many"));
  }
  for (uint64_t v = 2; v < 40; v += 1) {
    const bool failed_value = v == 2 || v == 3 || v == 4 || v == 7 || (v >= 9 && v % 2 == 1);
    if (failed_value) {
      EXPECT_FALSE(e.failure_at(v).ok()) << v;
    }
  }
  for (uint64_t v = 30; v < 40; v += 2) EXPECT_TRUE(e.failure_at(v).ok()) << v;
}

TEST(Event, WaitOnReachedValueReturnsAtOnceEvenWithoutTime) {
  EventOnlyDevice device;
  HostEvent e(device);
  e.signal(4);
  EXPECT_EQ(e.wait(4, 0ns), WaitResult::kReached);
  EXPECT_EQ(e.wait(2, 0ns), WaitResult::kReached);
  EXPECT_EQ(e.wait(0, Event::kForever), WaitResult::kReached);
}

TEST(Event, WaitTimesOut) {
  EventOnlyDevice device;
  HostEvent e(device);
  e.signal(1);
  EXPECT_EQ(e.wait(2, 0ns), WaitResult::kTimedOut);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(e.wait(2, 20ms), WaitResult::kTimedOut);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 20ms);
  EXPECT_EQ(e.value(), 1u);
}

TEST(Event, WaitEndsWhenStopped) {
  EventOnlyDevice device;
  HostEvent e(device);
  std::stop_source source;
  std::thread stopper([&] {
    std::this_thread::sleep_for(10ms);
    source.request_stop();
  });
  EXPECT_EQ(e.wait(1, Event::kForever, source.get_token()), WaitResult::kStopped);
  stopper.join();
}

// The waiter reads plain memory the signaller wrote before signalling: without the event's
// ordering that is a data race TSan reports.
TEST(Event, SignalFromAnotherThreadWakesWaiterAndPublishesWrites) {
  EventOnlyDevice device;
  HostEvent e(device);
  std::vector<int> data(1024, 0);
  std::thread producer([&] {
    std::this_thread::sleep_for(5ms);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<int>(i);
    e.signal(1);
  });
  ASSERT_EQ(e.wait(1, Event::kForever), WaitResult::kReached);
  for (size_t i = 0; i < data.size(); ++i) ASSERT_EQ(data[i], static_cast<int>(i));
  producer.join();
}

// Several signallers race to raise the value while waiters wait for every step: every waiter
// must be released, and the final value is the largest signalled.
TEST(Event, ConcurrentSignallersAndWaiters) {
  EventOnlyDevice device;
  HostEvent e(device);
  constexpr int kSteps = 200;
  std::atomic<int> released{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 3; ++w) {
    threads.emplace_back([&] {
      for (uint64_t v = 1; v <= kSteps; ++v) {
        if (e.wait(v, Event::kForever) == WaitResult::kReached) released.fetch_add(1);
      }
    });
  }
  for (int s = 0; s < 2; ++s) {
    threads.emplace_back([&, s] {
      for (uint64_t v = 1 + static_cast<uint64_t>(s); v <= kSteps; v += 2) e.signal(v);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(e.value(), static_cast<uint64_t>(kSteps));
  EXPECT_EQ(released.load(), 3 * kSteps);
}

}  // namespace
}  // namespace strata::backend
