// Events and copies on the synchronous host CPU backend: signals fire at once (everything
// before them is done), waits block the caller until another thread signals or time runs out.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "core/context.h"
#include "devices/cpu_topology.h"
#include "devices/host_device.h"
#include "devices/partition_device.h"

namespace strata::devices {
namespace {

using namespace std::chrono_literals;

TEST(HostEvents, HostDeviceHasEvents) {
  EXPECT_TRUE(host_device().caps().events);
  EXPECT_FALSE(host_device().caps().async);
  auto e = host_device().make_event();
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(&(*e)->device(), &host_device());
}

TEST(HostEvents, SignalFiresAtOnce) {
  auto be = host_device().make_backend({1});
  auto e = host_device().make_event();
  ASSERT_TRUE(be.ok() && e.ok());
  ASSERT_TRUE((*be)->signal(**e, 3).ok());
  EXPECT_EQ((*e)->value(), 3u);
  ASSERT_TRUE((*be)->signal(**e, 2).ok());
  EXPECT_EQ((*e)->value(), 3u);
}

TEST(HostEvents, SignalOfAnotherDevicesEventIsRefused) {
  PartitionDevice part({0, {allowed_cpus()[0]}, -1, 0});
  auto be = host_device().make_backend({1});
  auto e = part.make_event();
  ASSERT_TRUE(be.ok() && e.ok());
  const Status st = (*be)->signal(**e, 1);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "cpu: cannot signal an event of part:0 (signal it on its own device)");
  EXPECT_EQ((*e)->value(), 0u);
}

TEST(HostEvents, WaitBlocksUntilAnotherThreadSignals) {
  auto be = host_device().make_backend({1});
  auto e = host_device().make_event();
  ASSERT_TRUE(be.ok() && e.ok());
  std::vector<int> data(256, 0);
  std::thread other([&] {
    std::this_thread::sleep_for(10ms);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<int>(i);
    (*e)->signal(1);
  });
  ASSERT_TRUE((*be)->wait(**e, 1).ok());
  for (size_t i = 0; i < data.size(); ++i) ASSERT_EQ(data[i], static_cast<int>(i));
  other.join();
}

TEST(HostEvents, WaitNobodySignalsTimesOut) {
  auto be = host_device().make_backend({1, 20ms});
  auto e = host_device().make_event();
  ASSERT_TRUE(be.ok() && e.ok());
  const Status st = (*be)->wait(**e, 1);
  EXPECT_EQ(st.code(), ErrorCode::kInternal);
  EXPECT_EQ(st.message(),
            "cpu: wait for an event of cpu to reach 1 timed out after 0.02 s (nobody signalled "
            "it); its value is 0");
}

TEST(HostEvents, CopyAsyncCopiesWholeTensors) {
  auto be = host_device().make_backend({1});
  ASSERT_TRUE(be.ok());
  core::Context ctx;
  core::Tensor* src = ctx.new_tensor(core::Type::kF32, {3, 2, 1, 1}, "src");
  core::Tensor* dst = ctx.new_tensor(core::Type::kF32, {3, 2, 1, 1}, "dst");
  core::Tensor* odd = ctx.new_tensor(core::Type::kF32, {2, 3, 1, 1}, "odd");
  std::vector<float> a{1, 2, 3, 4, 5, 6}, b(6, 0), c(6, 0);
  auto ba = memory::wrap_host_memory(a.data(), 24);
  auto bb = memory::wrap_host_memory(b.data(), 24);
  auto bc = memory::wrap_host_memory(c.data(), 24);
  ASSERT_TRUE(ba->place(*src, 0).ok() && bb->place(*dst, 0).ok() && bc->place(*odd, 0).ok());
  ASSERT_TRUE((*be)->copy_async(*dst, *src).ok());
  EXPECT_EQ(b, a);
  const Status st = (*be)->copy_async(*odd, *src);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(st.message(),
            "copy of 'src' (f32 [3, 2, 1, 1]) into 'odd' (f32 [2, 3, 1, 1]): types or shapes "
            "differ");
}

}  // namespace
}  // namespace strata::devices
