// The table of signals rank 0 waits for: await_signals() returns only once the listener is
// done with every event an owner asked about, since the owner destroys them next.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "backend/host_event.h"
#include "devices/host_device.h"
#include "mpi/signals.h"

namespace strata::mpi {
namespace {

using namespace std::chrono_literals;

// An event whose raise takes a while, as one may on a busy host: the window in which a
// destroyed event would be touched.
class SlowEvent final : public backend::Event {
 public:
  SlowEvent() : backend::Event(devices::host_device()), inner_(devices::host_device()) {}
  uint64_t value() const override { return inner_.value(); }
  void signal(uint64_t v) override {
    std::this_thread::sleep_for(50ms);
    inner_.signal(v);
    done = true;
  }
  backend::WaitResult wait(uint64_t v, std::chrono::nanoseconds timeout,
                           std::stop_token stop) const override {
    return inner_.wait(v, timeout, stop);
  }
  std::atomic<bool> done{false};

 private:
  backend::HostEvent inner_;
};

TEST(MpiSignals, AwaitReturnsOnlyAfterTheEventIsRaised) {
  SlowEvent event;
  int owner = 0;
  const uint64_t token = expect_signal(1, &owner, event, 7);
  EXPECT_FALSE(await_signals(&owner, 1ms)) << "nothing answered yet";
  std::jthread listener([token] { signalled(token, {}); });
  // The answer is taken out of the table at once; the event is still being raised.
  std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(await_signals(&owner, 10s));
  EXPECT_TRUE(event.done);
  EXPECT_EQ(event.value(), 7u);
}

TEST(MpiSignals, FailedSignalsOfADeadRankSettleTheirOwners) {
  SlowEvent a;
  SlowEvent b;
  int owner = 0;
  int other = 0;
  (void)expect_signal(2, &owner, a, 3);
  (void)expect_signal(3, &other, b, 4);
  EXPECT_EQ(signals_outstanding(2), 1u);
  std::jthread listener([] { fail_signals(2, error(ErrorCode::kIo, "rank 2 is gone")); });
  std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(await_signals(&owner, 10s));
  EXPECT_TRUE(a.done);
  EXPECT_EQ(signals_outstanding(2), 0u);
  EXPECT_FALSE(await_signals(&other, 1ms)) << "another owner's signal is still pending";
  fail_signals(3, error(ErrorCode::kIo, "rank 3 is gone"));
  EXPECT_TRUE(await_signals(&other, 10s));
}

}  // namespace
}  // namespace strata::mpi
