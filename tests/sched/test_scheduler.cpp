// The scheduler against the plain single-backend run: splits, copies, views, asynchrony.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "core/ops.h"
#include "devices/host_device.h"
#include "devices/registry.h"
#include "memory/graph_allocator.h"
#include "sched/scheduler.h"

namespace strata::sched {
namespace {

using core::Tensor;

struct Weights {
  core::Context ctx;
  std::vector<std::unique_ptr<memory::Buffer>> buffers;
  Tensor* place(memory::BufferType& type, core::Type t, core::Shape ne, const std::string& name,
                uint32_t seed) {
    Tensor* w = ctx.new_tensor(t, ne, name);
    w->flags |= core::kFlagWeight;
    auto buf = type.allocate(w->nbytes());
    EXPECT_TRUE(buf.ok());
    EXPECT_TRUE((*buf)->place(*w, 0).ok());
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 0.3f);
    std::vector<float> v(static_cast<size_t>(w->nelements()));
    for (float& x : v) x = nd(rng);
    core::traits(t).from_float(v.data(), w->data, w->nelements());
    buffers.push_back(std::move(buf).value());
    return w;
  }
};

// A host embedding lookup whose output is viewed (a few rows) by a matmul on a partition,
// then a host matmul again: the view of host data sits between device ops.
struct Net {
  Tensor* table;
  Tensor* w_dev;
  Tensor* w_host;
};

Net make_net(Weights& w, memory::BufferType& dev) {
  Net n;
  n.table = w.place(memory::host_buffer_type(), core::Type::kF32, {64, 16, 1, 1}, "table", 1);
  n.w_dev = w.place(dev, core::Type::kQ8_0, {64, 48, 1, 1}, "w_dev", 2);
  n.w_host = w.place(memory::host_buffer_type(), core::Type::kF16, {48, 32, 1, 1}, "w_host", 3);
  return n;
}

struct Built {
  std::unique_ptr<core::Context> ctx = std::make_unique<core::Context>();
  core::Graph graph;
  Tensor* ids = nullptr;
  Tensor* view = nullptr;
  Tensor* out = nullptr;
};

Built build(const Net& n) {
  Built b;
  b.ids = b.ctx->new_tensor(core::Type::kI32, {6, 1, 1, 1}, "ids");
  Tensor* rows = core::get_rows(*b.ctx, n.table, b.ids);                        // host
  b.view = core::view(*b.ctx, rows, {64, 3, 1, 1}, rows->nb, 2 * rows->nb[1]);  // rows 2..4
  Tensor* h = core::rms_norm(*b.ctx, core::mul_mat(*b.ctx, n.w_dev, b.view), 1e-5f);
  b.out = core::mul_mat(*b.ctx, n.w_host, h);
  Tensor* outs[] = {b.out};
  b.graph = core::build_graph(outs);
  return b;
}

std::vector<float> run(Scheduler& s, const Net& n, const std::vector<int32_t>& ids,
                       size_t* copied) {
  Built b = build(n);
  EXPECT_TRUE(b.ctx->ok()) << b.ctx->status().message();
  EXPECT_TRUE(s.allocate(b.graph).ok());
  EXPECT_TRUE(s.backend_of(*b.ids).set_async(*b.ids, ids.data(), 0, ids.size() * 4).ok());
  Status st = s.compute();
  EXPECT_TRUE(st.ok()) << st.message();
  std::vector<float> out(static_cast<size_t>(b.out->nelements()));
  EXPECT_TRUE(s.backend_of(*b.out).get_async(*b.out, out.data(), 0, b.out->nbytes()).ok());
  EXPECT_TRUE(s.backend_of(*b.out).synchronize().ok());
  if (copied != nullptr) *copied = s.bytes_copied();
  return out;
}

TEST(Scheduler, ViewOfHostDataBetweenDeviceOpsCopiesOnlyTheViewedBytes) {
  auto parts = devices::make_partitions(2, 0);
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  backend::Device& dev = *(*parts)[0];
  Weights w;
  const Net net = make_net(w, dev.buffer_type());
  auto host_be = devices::host_device().make_backend({2});
  auto dev_be = dev.make_backend({});
  ASSERT_TRUE(host_be.ok() && dev_be.ok());

  // Reference: the same graph with every tensor read from the host backend alone. The device
  // weight lives in host-addressable memory, so the host can run it too.
  Scheduler plain({host_be->get()});
  Scheduler split({dev_be->get(), host_be->get()});
  const std::vector<int32_t> ids = {3, 1, 4, 1, 5, 9};
  size_t copied = 0;
  const auto expected = run(plain, net, ids, nullptr);
  const auto got = run(split, net, ids, &copied);
  EXPECT_EQ(got, expected);
  ASSERT_GE(split.splits().size(), 2u);
  // Copied: the 3 viewed rows into the device, the device result back; never all 6 rows.
  const size_t viewed = 3 * 64 * sizeof(float);
  const size_t back = 48 * 3 * sizeof(float);
  EXPECT_EQ(copied, viewed + back) << split.describe();
}

TEST(Scheduler, ManyQueuedRunsMatchSequentialOnes) {
  auto parts = devices::make_partitions(2, 0);
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  Weights w;
  const Net net = make_net(w, (*parts)[1]->buffer_type());
  auto host_be = devices::host_device().make_backend({1});
  auto dev_be = (*parts)[1]->make_backend({});
  ASSERT_TRUE(host_be.ok() && dev_be.ok());
  Scheduler s({dev_be->get(), host_be->get()});
  std::mt19937 rng(11);
  std::vector<std::vector<int32_t>> inputs;
  std::vector<std::vector<float>> expected;
  for (int i = 0; i < 12; ++i) {
    std::vector<int32_t> ids(6);
    for (int32_t& id : ids) id = static_cast<int32_t>(rng() % 16);
    inputs.push_back(ids);
    expected.push_back(run(s, net, ids, nullptr));
  }
  // Queue all runs back to back, reading each result asynchronously; synchronize once.
  std::vector<Built> built;
  built.reserve(inputs.size());
  std::vector<std::vector<float>> got(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    Built& b = built.emplace_back(build(net));
    ASSERT_TRUE(s.allocate(b.graph).ok());
    ASSERT_TRUE(s.backend_of(*b.ids).set_async(*b.ids, inputs[i].data(), 0, 24).ok());
    ASSERT_TRUE(s.compute_async().ok());
    got[i].resize(static_cast<size_t>(b.out->nelements()));
    ASSERT_TRUE(s.backend_of(*b.out).get_async(*b.out, got[i].data(), 0, b.out->nbytes()).ok());
  }
  ASSERT_TRUE(s.synchronize().ok());
  EXPECT_EQ(got, expected);
}

TEST(Scheduler, EvalCallbackObservesNamedNodesInOrder) {
  auto parts = devices::make_partitions(2, 0);
  ASSERT_TRUE(parts.ok());
  Weights w;
  const Net net = make_net(w, (*parts)[0]->buffer_type());
  auto host_be = devices::host_device().make_backend({1});
  auto dev_be = (*parts)[0]->make_backend({});
  Scheduler s({dev_be->get(), host_be->get()});
  std::vector<std::string> seen;
  s.set_eval_callback([&seen](const Tensor& t, bool ask) {
    if (ask) return t.op == core::Op::kMulMat;
    seen.push_back(t.name);
    EXPECT_NE(t.data, nullptr);
    return true;
  });
  (void)run(s, net, {0, 1, 2, 3, 4, 5}, nullptr);
  EXPECT_EQ(seen.size(), 2u);
}

// A compute buffer that does not fit the device budget is an error, and the scheduler stays
// usable: a graph that fits runs correctly afterwards.
TEST(Scheduler, OutOfBudgetAllocationFailsAndLeavesTheSchedulerUsable) {
  auto parts = devices::make_partitions(2, size_t{64} << 10);
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  backend::Device& dev = *(*parts)[0];
  Weights w;
  Tensor* weight = w.place(dev.buffer_type(), core::Type::kF32, {64, 64, 1, 1}, "w", 5);
  auto host_be = devices::host_device().make_backend({1});
  auto dev_be = dev.make_backend({});
  Scheduler s({dev_be->get(), host_be->get()});
  auto build_mm = [&](int64_t n, core::Context& ctx, Tensor** x, Tensor** y) {
    *x = ctx.new_tensor(core::Type::kF32, {64, n, 1, 1}, "x");
    *y = core::mul_mat(ctx, weight, *x);
    Tensor* outs[] = {*y};
    return core::build_graph(outs);
  };
  {
    core::Context ctx;
    Tensor *x, *y;
    core::Graph big = build_mm(4096, ctx, &x, &y);  // 1 MiB of activations: over budget
    Status st = s.allocate(big);
    EXPECT_EQ(st.code(), ErrorCode::kOutOfMemory);
    EXPECT_NE(st.message().find("part:0"), std::string::npos) << st.message();
  }
  core::Context ctx;
  Tensor *x, *y;
  core::Graph small = build_mm(4, ctx, &x, &y);
  ASSERT_TRUE(s.allocate(small).ok());
  std::vector<float> xs(64 * 4, 0.5f);
  ASSERT_TRUE(s.backend_of(*x).set_async(*x, xs.data(), 0, xs.size() * 4).ok());
  ASSERT_TRUE(s.compute().ok());
  std::vector<float> ys(64 * 4);
  ASSERT_TRUE(s.backend_of(*y).get_async(*y, ys.data(), 0, ys.size() * 4).ok());
  ASSERT_TRUE(s.synchronize().ok());
  const float* wd = static_cast<const float*>(weight->data);
  double expect = 0;
  for (int k = 0; k < 64; ++k) expect += 0.5 * wd[k];
  EXPECT_NEAR(ys[0], expect, 1e-4);
}

}  // namespace
}  // namespace strata::sched

namespace strata::sched {
namespace {

// Planning works on the scheduler's own copy: the caller's nodes keep their sources (no
// re-pointing at input copies), and only get the memory of their copies.
TEST(PlanCache, TheCallersGraphIsNotRewritten) {
  auto parts = devices::make_partitions(2, 0);
  ASSERT_TRUE(parts.ok());
  Weights w;
  const Net net = make_net(w, (*parts)[0]->buffer_type());
  auto host_be = devices::host_device().make_backend({1});
  auto dev_be = (*parts)[0]->make_backend({});
  Scheduler s({dev_be->get(), host_be->get()});
  Built b = build(net);
  std::vector<std::array<Tensor*, core::kMaxSrc>> srcs;
  for (Tensor* n : b.graph.nodes) srcs.push_back(n->src);
  ASSERT_TRUE(s.allocate(b.graph).ok());
  ASSERT_GE(s.splits().size(), 2u);
  for (size_t i = 0; i < b.graph.nodes.size(); ++i) {
    EXPECT_EQ(b.graph.nodes[i]->src, srcs[i]) << b.graph.nodes[i]->name;
    EXPECT_NE(b.graph.nodes[i]->data, nullptr) << b.graph.nodes[i]->name;
  }
  // What runs are copies with the same names.
  for (const Split& sp : s.splits()) {
    for (const Tensor* n : sp.nodes) {
      EXPECT_EQ(std::find(b.graph.nodes.begin(), b.graph.nodes.end(), n), b.graph.nodes.end());
    }
  }
  EXPECT_EQ(s.splits().back().nodes.back()->name, b.out->name);
}

TEST(PlanCache, SameShapeReusesThePlanAndAnotherShapePlansAgain) {
  auto parts = devices::make_partitions(2, 0);
  ASSERT_TRUE(parts.ok());
  Weights w;
  const Net net = make_net(w, (*parts)[1]->buffer_type());
  auto host_be = devices::host_device().make_backend({1});
  auto dev_be = (*parts)[1]->make_backend({});
  Scheduler s({dev_be->get(), host_be->get()});
  Scheduler fresh({dev_be->get(), host_be->get()});
  const std::vector<int32_t> ids = {3, 1, 4, 1, 5, 9};
  const auto expected = run(fresh, net, ids, nullptr);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(run(s, net, ids, nullptr), expected);
  EXPECT_EQ(s.plans_built(), 1u);
  EXPECT_EQ(s.plans_reused(), 4u);
  // The same graph object allocated again keeps its signature (its placement is ours).
  Built b = build(net);
  ASSERT_TRUE(s.allocate(b.graph).ok());
  ASSERT_TRUE(s.allocate(b.graph).ok());
  EXPECT_EQ(s.plans_built(), 1u);
  // Another shape: a graph over 12 ids instead of 6 plans again; afterwards the first shape
  // still runs from its plan, placed anew if the compute buffer had to grow.
  core::Context ctx;
  Tensor* ids12 = ctx.new_tensor(core::Type::kI32, {12, 1, 1, 1}, "ids");
  Tensor* rows = core::get_rows(ctx, net.table, ids12);
  Tensor* big = core::mul_mat(ctx, net.w_dev, rows);
  Tensor* outs[] = {big};
  core::Graph g12 = core::build_graph(outs);
  ASSERT_TRUE(s.allocate(g12).ok());
  EXPECT_EQ(s.plans_built(), 2u);
  EXPECT_EQ(run(s, net, ids, nullptr), expected);
  EXPECT_EQ(s.plans_built(), 2u);
}

}  // namespace
}  // namespace strata::sched
