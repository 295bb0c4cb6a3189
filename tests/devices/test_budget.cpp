// A partition's memory budget: allocations past it fail with a message naming the sizes,
// freeing returns budget, and a failed allocation leaves the device usable.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

#include "core/ops.h"
#include "devices/budget_buffer_type.h"
#include "devices/cpu_topology.h"
#include "devices/host_device.h"
#include "devices/partition_device.h"
#include "memory/graph_allocator.h"
#include "test_net.h"

namespace strata::devices {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(Budget, AllocationBeyondTheBudgetFailsWithTheSizes) {
  BudgetBufferType type("part:1", 512 * kMiB, -1);
  auto a = type.allocate(300 * kMiB);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(type.in_use(), 300 * kMiB);
  auto b = type.allocate(812 * kMiB);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), ErrorCode::kOutOfMemory);
  EXPECT_EQ(b.status().message(),
            "part:1: cannot allocate 812 MiB: 300 MiB of 512 MiB budget in use");
  auto c = type.allocate(300 * kMiB);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(type.in_use(), 300 * kMiB);  // failures take nothing
}

TEST(Budget, FreeingReturnsTheBudget) {
  BudgetBufferType type("part:0", 8 * kMiB, -1);
  auto a = type.allocate(6 * kMiB);
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(type.allocate(4 * kMiB).ok());
  a->reset();
  EXPECT_EQ(type.in_use(), 0u);
  auto b = type.allocate(8 * kMiB);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(type.in_use(), 8 * kMiB);
}

TEST(Budget, SizesRoundUpToPagesAndTheBudgetIsExact) {
  BudgetBufferType type("part:0", 3 * 4096, -1);
  auto a = type.allocate(1);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ((*a)->size(), 4096u);
  auto b = type.allocate(2 * 4096);
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(type.allocate(1).ok());
  EXPECT_EQ(type.in_use(), 3 * 4096u);
}

TEST(Budget, NoBudgetMeansOnlyTheOsCanRefuse) {
  BudgetBufferType type("part:0", 0, -1);
  EXPECT_EQ(type.max_size(), SIZE_MAX);
  auto a = type.allocate(64 * kMiB);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(type.in_use(), 64 * kMiB);
  EXPECT_EQ(type.allocate(SIZE_MAX).status().code(), ErrorCode::kOutOfMemory);
}

// Threads race for a budget that fits exactly half of their requests: exactly that many win.
TEST(Budget, ConcurrentAllocationsNeverOvershoot) {
  BudgetBufferType type("part:0", 16 * 4096, -1);
  std::vector<std::unique_ptr<memory::Buffer>> won(32);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < won.size(); ++i) {
    threads.emplace_back([&, i] {
      auto b = type.allocate(4096);
      if (b.ok()) won[i] = std::move(b).value();
    });
  }
  for (auto& t : threads) t.join();
  size_t n = 0;
  for (const auto& b : won) n += b != nullptr;
  EXPECT_EQ(n, 16u);
  EXPECT_EQ(type.in_use(), 16 * 4096u);
}

TEST(Budget, FailedAllocationLeavesThePartitionUsable) {
  const std::vector<int> cpus = allowed_cpus();
  PartitionDevice d({0, {cpus[0]}, -1, 4 * kMiB});
  auto big = d.buffer_type().allocate(5 * kMiB);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().message(), "part:0: cannot allocate 5 MiB: 0 B of 4 MiB budget in use");
  EXPECT_EQ(d.memory().free, 4 * kMiB);

  const test::NetShape shape{core::Type::kF32, 64, 4, 1};
  auto net = test::Net::create(d, shape);
  ASSERT_TRUE(net.ok()) << net.status().message();
  EXPECT_GT(d.memory_in_use(), 0u);
  EXPECT_EQ(d.memory().free, 4 * kMiB - d.memory_in_use());
  auto be = d.make_backend({});
  ASSERT_TRUE(be.ok());
  const std::vector<float> input = (*net)->make_input(1);
  auto out = test::run_net(**be, **net, input);
  ASSERT_TRUE(out.ok()) << out.status().message();
  for (float v : *out) EXPECT_TRUE(std::isfinite(v));
}

}  // namespace
}  // namespace strata::devices

namespace strata::devices {
namespace {

// A compute buffer that cannot grow keeps its size: graphs that fitted still place. (Under a
// budget the old buffer is freed for a second try; then one of the old size comes back, and
// the generation says that placements into the old one are stale.)
TEST(Budget, FailedGrowOfTheGraphAllocatorKeepsItsBuffer) {
  BudgetBufferType type("part:0", 1 * kMiB, -1);
  memory::GraphAllocator alloc(type);
  auto graph_of = [](core::Context& ctx, int64_t n) {
    core::Tensor* x = ctx.new_tensor(core::Type::kF32, {n, 1, 1, 1}, "x");
    core::Tensor* y = core::scale(ctx, x, 2.0f);
    core::Tensor* outs[] = {y};
    return core::build_graph(outs);
  };
  core::Context small_ctx;
  core::Graph small = graph_of(small_ctx, 16 * 1024);  // 128 KiB
  ASSERT_TRUE(alloc.allocate(small).ok());
  const size_t size = alloc.buffer_size();
  core::Context big_ctx;
  core::Graph big = graph_of(big_ctx, 512 * 1024);  // 4 MiB: over the budget
  Status st = alloc.allocate(big);
  EXPECT_EQ(st.code(), ErrorCode::kOutOfMemory);
  EXPECT_EQ(alloc.buffer_size(), size);
  EXPECT_GT(alloc.generation(), 1u);
  core::Context again_ctx;
  core::Graph again = graph_of(again_ctx, 16 * 1024);
  const uint64_t generation = alloc.generation();
  ASSERT_TRUE(alloc.allocate(again).ok());
  EXPECT_EQ(alloc.generation(), generation) << "no new allocation for a graph that fits";
  EXPECT_NE(again.nodes.back()->data, nullptr);
}

}  // namespace
}  // namespace strata::devices
