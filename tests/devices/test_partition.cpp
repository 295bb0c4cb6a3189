// Partition devices: an asynchronous in-order queue whose signals fire after the work before
// them, whose waits hold later work, whose errors surface at synchronize(), and whose results
// are bit-identical to the host's (run under TSan: -DSTRATA_TSAN=ON).
#include "devices/partition_device.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "core/ops.h"
#include "devices/cpu_topology.h"
#include "devices/host_device.h"
#include "test_net.h"

namespace strata::devices {
namespace {

using namespace std::chrono_literals;
using test::Net;
using test::NetShape;

// Partition `index` on one allowed core (distinct cores while there are enough).
PartitionSpec one_core(int index, size_t budget = 0) {
  const std::vector<int> cpus = allowed_cpus();
  return {index, {cpus[static_cast<size_t>(index) % cpus.size()]}, -1, budget};
}

std::unique_ptr<backend::Backend> backend_of(backend::Device& d, backend::BackendOptions o = {}) {
  auto be = d.make_backend(o);
  EXPECT_TRUE(be.ok()) << be.status().message();
  return std::move(be).value();
}

std::unique_ptr<backend::Event> event_of(backend::Device& d) {
  auto e = d.make_event();
  EXPECT_TRUE(e.ok()) << e.status().message();
  return std::move(e).value();
}

std::vector<float> host_result(const NetShape& shape, const std::vector<float>& input) {
  auto net = Net::create(host_device(), shape);
  EXPECT_TRUE(net.ok()) << net.status().message();
  auto be = backend_of(host_device(), {1});
  auto out = test::run_net(*be, **net, input);
  EXPECT_TRUE(out.ok()) << out.status().message();
  return *out;
}

TEST(PartitionDevice, DescribesItself) {
  PartitionDevice d(one_core(3, size_t{64} << 20));
  EXPECT_EQ(d.name(), "part:3");
  EXPECT_EQ(d.kind(), backend::DeviceKind::kPartition);
  EXPECT_TRUE(d.caps().async);
  EXPECT_TRUE(d.caps().events);
  EXPECT_TRUE(d.caps().host_buffers);
  EXPECT_EQ(d.buffer_type().name(), "part:3");
  EXPECT_TRUE(d.buffer_type().is_host());
  EXPECT_EQ(d.memory().total, size_t{64} << 20);
  EXPECT_EQ(d.memory().free, size_t{64} << 20);
}

// The queue computes a graph slow enough to be caught half-way, copies the result out and
// signals. The host polls the value and reads the copy the moment it sees the signal: a
// signal that fired early would show an incomplete copy (and TSan a race).
TEST(PartitionBackend, SignalFiresOnlyAfterTheWorkQueuedBeforeIt) {
  const NetShape shape{core::Type::kF32, 128, 8, 4};
  PartitionDevice d(one_core(0));
  auto net = Net::create(d, shape);
  ASSERT_TRUE(net.ok()) << net.status().message();
  const std::vector<float> input = (*net)->make_input(1);
  const std::vector<float> expected = host_result(shape, input);
  auto be = backend_of(d);
  auto done = event_of(d);
  for (uint64_t round = 1; round <= 3; ++round) {
    std::vector<float> out(expected.size(), NAN);
    ASSERT_TRUE(be->set_async(*(*net)->input(), input.data(), 0, input.size() * 4).ok());
    ASSERT_TRUE(be->compute_async((*net)->graph()).ok());
    ASSERT_TRUE(be->get_async(*(*net)->output(), out.data(), 0, out.size() * 4).ok());
    ASSERT_TRUE(be->signal(*done, round).ok());
    while (done->value() < round) std::this_thread::yield();
    ASSERT_EQ(std::memcmp(out.data(), expected.data(), out.size() * 4), 0) << "round " << round;
  }
  EXPECT_TRUE(be->synchronize().ok());
}

// Work queued after a device-side wait must not start before a host thread signals.
TEST(PartitionBackend, WaitHoldsLaterWorkUntilAHostThreadSignals) {
  PartitionDevice d(one_core(0));
  const NetShape shape{core::Type::kF32, 32, 2, 1};
  auto net = Net::create(d, shape);
  ASSERT_TRUE(net.ok()) << net.status().message();
  const std::vector<float> input = (*net)->make_input(2);
  const std::vector<float> expected = host_result(shape, input);
  auto be = backend_of(d);
  auto gate = event_of(host_device());
  auto done = event_of(d);

  std::vector<float> out(expected.size(), NAN);
  ASSERT_TRUE(be->wait(*gate, 1).ok());
  ASSERT_TRUE(be->set_async(*(*net)->input(), input.data(), 0, input.size() * 4).ok());
  ASSERT_TRUE(be->compute_async((*net)->graph()).ok());
  ASSERT_TRUE(be->get_async(*(*net)->output(), out.data(), 0, out.size() * 4).ok());
  ASSERT_TRUE(be->signal(*done, 1).ok());

  EXPECT_EQ(done->wait(1, 50ms), backend::WaitResult::kTimedOut);
  std::thread host([&] {
    std::this_thread::sleep_for(10ms);
    gate->signal(1);
  });
  EXPECT_EQ(done->wait(1, 60s), backend::WaitResult::kReached);
  host.join();
  EXPECT_EQ(std::memcmp(out.data(), expected.data(), out.size() * 4), 0);
  EXPECT_TRUE(be->synchronize().ok());
}

// A queue released by a failed signal fails too (keeping the failure's message), skips its
// work, and marks its own signals failed, so the failure travels on to whoever waits on it.
TEST(PartitionBackend, AFailureTravelsAlongSignals) {
  PartitionDevice d(one_core(0));
  auto be = backend_of(d);
  auto gate = event_of(host_device());
  auto done = event_of(d);
  gate->signal_failed(1, error(ErrorCode::kOutOfMemory, "upstream ran out of memory"));
  ASSERT_TRUE(be->wait(*gate, 1).ok());
  ASSERT_TRUE(be->signal(*done, 1).ok());
  EXPECT_EQ(done->wait(1, 60s), backend::WaitResult::kReached);
  EXPECT_EQ(done->failure_at(1).message(), "upstream ran out of memory");
  const Status st = be->synchronize();
  EXPECT_EQ(st.code(), ErrorCode::kOutOfMemory);
  // Synchronized, the queue works again and signals plainly.
  ASSERT_TRUE(be->signal(*done, 2).ok());
  ASSERT_TRUE(be->synchronize().ok());
  EXPECT_TRUE(done->failure_at(2).ok());
}

// A computes and signals; B waits for it, copies A's result into its own memory and computes
// on the copy: the same as computing twice on the host.
TEST(PartitionBackend, EventsOrderWorkAcrossTwoPartitions) {
  const NetShape shape{core::Type::kQ8_0, 64, 4, 2};
  PartitionDevice da(one_core(0));
  PartitionDevice db(one_core(1));
  auto net_a = Net::create(da, shape);
  auto net_b = Net::create(db, shape);
  ASSERT_TRUE(net_a.ok() && net_b.ok());
  const std::vector<float> input = (*net_a)->make_input(3);
  const std::vector<float> expected = host_result(shape, host_result(shape, input));

  auto a = backend_of(da);
  auto b = backend_of(db);
  auto a_done = event_of(da);
  std::vector<float> out(expected.size(), NAN);
  ASSERT_TRUE(b->wait(*a_done, 1).ok());
  ASSERT_TRUE(b->copy_async(*(*net_b)->input(), *(*net_a)->output()).ok());
  ASSERT_TRUE(b->compute_async((*net_b)->graph()).ok());
  ASSERT_TRUE(b->get_async(*(*net_b)->output(), out.data(), 0, out.size() * 4).ok());
  // B is queued first, so only the event can make it wait for A.
  std::this_thread::sleep_for(5ms);
  ASSERT_TRUE(a->set_async(*(*net_a)->input(), input.data(), 0, input.size() * 4).ok());
  ASSERT_TRUE(a->compute_async((*net_a)->graph()).ok());
  ASSERT_TRUE(a->signal(*a_done, 1).ok());

  ASSERT_TRUE(b->synchronize().ok());
  ASSERT_TRUE(a->synchronize().ok());
  EXPECT_EQ(std::memcmp(out.data(), expected.data(), out.size() * 4), 0);
}

TEST(PartitionBackend, ComputesBitIdenticallyToTheHostBackend) {
  const std::vector<int> cpus = allowed_cpus();
  PartitionDevice d(
      {0, std::vector<int>(cpus.begin(), cpus.begin() + std::min<size_t>(2, cpus.size())), -1, 0});
  for (core::Type type : {core::Type::kF32, core::Type::kF16, core::Type::kQ8_0}) {
    const NetShape shape{type, 96, 5, 2};
    auto net = Net::create(d, shape);
    ASSERT_TRUE(net.ok()) << net.status().message();
    const std::vector<float> input = (*net)->make_input(4);
    auto be = backend_of(d);
    auto out = test::run_net(*be, **net, input);
    ASSERT_TRUE(out.ok()) << out.status().message();
    const std::vector<float> expected = host_result(shape, input);
    EXPECT_EQ(std::memcmp(out->data(), expected.data(), expected.size() * 4), 0)
        << core::type_name(type);
  }
}

// get_rows with an id out of range fails while running: compute_async accepts it, the error
// comes back from synchronize() (once), work after it is skipped, signals still fire, and the
// backend then works again.
TEST(PartitionBackend, QueueErrorsSurfaceAtSynchronize) {
  PartitionDevice d(one_core(0));
  core::Context ctx;
  core::Tensor* table = ctx.new_tensor(core::Type::kF32, {4, 3, 1, 1}, "table");
  core::Tensor* ids = ctx.new_tensor(core::Type::kI32, {1, 1, 1, 1}, "ids");
  core::Tensor* rows = core::get_rows(ctx, table, ids);
  ASSERT_TRUE(ctx.ok());
  core::Tensor* outs[] = {rows};
  core::Graph g = core::build_graph(outs);
  memory::GraphAllocator galloc(d.buffer_type());
  ASSERT_TRUE(galloc.allocate(g).ok());
  auto be = backend_of(d);
  auto e = event_of(d);

  const int32_t bad_id = 7;
  std::vector<float> out(4, NAN);
  ASSERT_TRUE(be->set_async(*ids, &bad_id, 0, sizeof bad_id).ok());
  ASSERT_TRUE(be->compute_async(g).ok());
  ASSERT_TRUE(be->get_async(*rows, out.data(), 0, 16).ok());
  ASSERT_TRUE(be->signal(*e, 1).ok());
  const Status st = be->synchronize();
  EXPECT_EQ(st.code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(st.message().rfind("part:0: ", 0), 0u) << st.message();
  EXPECT_EQ(e->value(), 1u);
  EXPECT_TRUE(std::isnan(out[0]));  // the copy after the failure was skipped
  EXPECT_TRUE(be->synchronize().ok());

  const float table_data[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  const int32_t good_id = 2;
  ASSERT_TRUE(be->set_async(*table, table_data, 0, sizeof table_data).ok());
  ASSERT_TRUE(be->set_async(*ids, &good_id, 0, sizeof good_id).ok());
  ASSERT_TRUE(be->compute_async(g).ok());
  ASSERT_TRUE(be->get_async(*rows, out.data(), 0, 16).ok());
  ASSERT_TRUE(be->synchronize().ok());
  EXPECT_EQ(out, (std::vector<float>{8, 9, 10, 11}));
}

TEST(PartitionBackend, BadArgumentsAreRefusedAtOnce) {
  PartitionDevice d(one_core(0));
  PartitionDevice other(one_core(1));
  auto be = backend_of(d);
  auto foreign = event_of(other);
  const Status st = be->signal(*foreign, 1);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "part:0: cannot signal an event of part:1 (signal it on its own device)");

  core::Context ctx;
  core::Tensor* t = ctx.new_tensor(core::Type::kF32, {4, 1, 1, 1}, "t");
  float v[8] = {};
  EXPECT_EQ(be->set_async(*t, v, 0, 16).code(), ErrorCode::kInternal);  // not placed
  auto buf = d.buffer_type().allocate(16);
  ASSERT_TRUE(buf.ok());
  ASSERT_TRUE((*buf)->place(*t, 0).ok());
  EXPECT_EQ(be->set_async(*t, v, 8, 16).code(), ErrorCode::kInvalidArgument);
  core::Tensor* u = ctx.new_tensor(core::Type::kF32, {2, 2, 1, 1}, "u");
  EXPECT_EQ(be->copy_async(*u, *t).code(), ErrorCode::kInternal);
  EXPECT_TRUE(be->synchronize().ok());
}

TEST(PartitionBackend, WaitThatNobodySignalsTimesOutAsAQueueError) {
  PartitionDevice d(one_core(0));
  auto be = backend_of(d, {1, 20ms});
  auto never = event_of(d);
  auto done = event_of(d);
  ASSERT_TRUE(be->wait(*never, 1).ok());
  ASSERT_TRUE(be->signal(*done, 1).ok());
  const Status st = be->synchronize();
  EXPECT_EQ(st.code(), ErrorCode::kInternal);
  EXPECT_NE(st.message().find("part:0: wait for an event of part:0 to reach 1 timed out"),
            std::string::npos)
      << st.message();
  EXPECT_EQ(done->value(), 1u);
}

TEST(PartitionBackend, DestructionRunsTheQueuedWork) {
  const NetShape shape{core::Type::kF32, 64, 4, 2};
  PartitionDevice d(one_core(0));
  auto net = Net::create(d, shape);
  ASSERT_TRUE(net.ok());
  const std::vector<float> input = (*net)->make_input(5);
  std::vector<float> out(static_cast<size_t>((*net)->output()->nelements()), NAN);
  {
    auto be = backend_of(d);
    ASSERT_TRUE(be->set_async(*(*net)->input(), input.data(), 0, input.size() * 4).ok());
    ASSERT_TRUE(be->compute_async((*net)->graph()).ok());
    ASSERT_TRUE(be->get_async(*(*net)->output(), out.data(), 0, out.size() * 4).ok());
  }
  EXPECT_EQ(out, host_result(shape, input));
}

TEST(PartitionBackend, DestructionDoesNotHangOnAWaitNobodySignals) {
  PartitionDevice d(one_core(0));
  auto never = event_of(d);
  auto done = event_of(d);
  const auto start = std::chrono::steady_clock::now();
  {
    auto be = backend_of(d);  // the default wait timeout is minutes
    ASSERT_TRUE(be->wait(*never, 1).ok());
    ASSERT_TRUE(be->signal(*done, 1).ok());
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_EQ(done->value(), 1u);
}

TEST(PartitionBackend, TwoBackendsShareTheDevicesTeam) {
  const NetShape shape{core::Type::kF32, 64, 3, 2};
  PartitionDevice d(one_core(0));
  auto n1 = Net::create(d, shape);
  auto n2 = Net::create(d, shape);
  ASSERT_TRUE(n1.ok() && n2.ok());
  const std::vector<float> i1 = (*n1)->make_input(6), i2 = (*n2)->make_input(7);
  auto b1 = backend_of(d);
  auto b2 = backend_of(d);
  std::vector<float> o1, o2;
  auto run = [](backend::Backend& be, const Net& net, const std::vector<float>& in,
                std::vector<float>& out) {
    auto r = test::run_net(be, net, in);
    if (r.ok()) out = *r;
  };
  std::thread t1([&] { run(*b1, **n1, i1, o1); });
  std::thread t2([&] { run(*b2, **n2, i2, o2); });
  t1.join();
  t2.join();
  EXPECT_EQ(o1, host_result(shape, i1));
  EXPECT_EQ(o2, host_result(shape, i2));
}

}  // namespace
}  // namespace strata::devices
