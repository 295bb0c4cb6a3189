// Paged execution against the plain run, on the host CPU backend and on a partition: segmented
// runs, progressive signals, waits released by host threads, encode windows and blits.
// Run under ThreadSanitizer in CI.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backend/device.h"
#include "core/ops.h"
#include "devices/host_device.h"
#include "devices/registry.h"
#include "memory/graph_allocator.h"
#include "paged/paged_backend.h"

namespace strata::paged {
namespace {

using core::Tensor;
using namespace std::chrono_literals;

constexpr uint8_t kSentinel = 0xA5;

// x -> n0 = 2x -> n1 = silu(n0) -> n1_flat (a view) -> n2 = 3 n1_flat -> n3 = n2 / 2.
// Every node is an output, so each keeps its own memory and can be inspected afterwards.
struct Chain {
  std::unique_ptr<core::Context> ctx = std::make_unique<core::Context>();
  core::Graph graph;
  Tensor *x, *n0, *n1, *n2, *n3;
  std::unique_ptr<memory::GraphAllocator> alloc;

  explicit Chain(backend::Device& device) {
    x = ctx->new_tensor(core::Type::kF32, {64, 4, 1, 1}, "x");
    x->flags |= core::kFlagInput | core::kFlagOutput;  // kept: nothing runs in place over it
    n0 = core::scale(*ctx, x, 2.0f);
    n0->name = "n0";
    n1 = core::silu(*ctx, n0);
    n1->name = "n1";
    Tensor* flat = core::reshape(*ctx, n1, {256, 1, 1, 1});
    flat->name = "n1_flat";
    n2 = core::scale(*ctx, flat, 3.0f);
    n2->name = "n2";
    n3 = core::scale(*ctx, n2, 0.5f);
    n3->name = "n3";
    Tensor* outs[] = {n0, n1, n2, n3};
    graph = core::build_graph(outs);
    alloc = std::make_unique<memory::GraphAllocator>(device.buffer_type());
    EXPECT_TRUE(ctx->ok());
    EXPECT_TRUE(alloc->allocate(graph).ok());
    auto* xs = static_cast<float*>(x->data);
    for (int i = 0; i < 256; ++i) xs[i] = static_cast<float>(i % 17) * 0.25f - 2.0f;
  }
  std::vector<Tensor*> nodes() const { return {n0, n1, n2, n3}; }
  void fill_sentinel() const {
    for (Tensor* t : nodes()) std::memset(t->data, kSentinel, t->nbytes());
  }
};

std::vector<float> read(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.nelements()));
  std::memcpy(v.data(), t.data, t.nbytes());
  return v;
}

bool is_sentinel(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.data);
  for (size_t i = 0; i < t.nbytes(); ++i) {
    if (p[i] != kSentinel) return false;
  }
  return true;
}

class Paged : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "partition") {
      auto parts = devices::make_partitions(1, 0);
      ASSERT_TRUE(parts.ok()) << parts.status().message();
      device_ = (*parts)[0];
    } else {
      device_ = &devices::host_device();
    }
    make_backend(std::chrono::minutes(1));
    chain_ = std::make_unique<Chain>(*device_);
    // The plain result, from the ordinary path.
    ASSERT_TRUE(run().ok());
    for (Tensor* t : chain_->nodes()) expected_.push_back(read(*t));
  }

  void make_backend(std::chrono::nanoseconds wait_timeout) {
    auto be = device_->make_backend({.n_threads = 2, .wait_timeout = wait_timeout});
    ASSERT_TRUE(be.ok()) << be.status().message();
    paged_ = std::make_unique<PagedBackend>(std::move(be).value());
  }

  std::unique_ptr<backend::Event> event() {
    auto e = device_->make_event();
    EXPECT_TRUE(e.ok());
    return std::move(e).value();
  }

  // Queues the chain and waits for it.
  Status run() {
    Status st = paged_->compute_async(chain_->graph);
    Status done = paged_->synchronize();
    return st.ok() ? done : st;
  }

  void expect_all_equal_plain() {
    const auto nodes = chain_->nodes();
    for (size_t i = 0; i < nodes.size(); ++i)
      EXPECT_EQ(read(*nodes[i]), expected_[i]) << nodes[i]->name;
  }

  BoundarySchedule cut_after_every_node(backend::Event* e) {
    BoundarySchedule s;
    uint64_t v = 0;
    for (const char* n : {"n0", "n1_flat", "n2", "n3"}) s.cuts.push_back({n, {e, ++v}});
    return s;
  }

  backend::Device* device_ = nullptr;
  std::unique_ptr<PagedBackend> paged_;
  std::unique_ptr<Chain> chain_;
  std::vector<std::vector<float>> expected_;
};

TEST_P(Paged, FourNodeChainThroughThePagedPathEqualsThePlainRun) {
  auto e = event();
  paged_->set_schedule(cut_after_every_node(e.get()));
  chain_->fill_sentinel();
  ASSERT_TRUE(run().ok());
  expect_all_equal_plain();
  // One segment per cut; the cut on the view "n1_flat" cut after n1, which produces its data.
  EXPECT_EQ(paged_->segments_run(), 4u);
  EXPECT_EQ(paged_->cuts_found(), 4u);
  EXPECT_EQ(e->value(), 4u);
  const auto signals = paged_->take_queued_signals();
  ASSERT_EQ(signals.size(), 4u);
  EXPECT_EQ(signals.back().value, 4u);
}

TEST_P(Paged, ScheduleWithoutCutsIsTheOrdinaryPath) {
  auto e = event();
  paged_->set_schedule(cut_after_every_node(e.get()));
  paged_->set_schedule({});  // cleared
  chain_->fill_sentinel();
  ASSERT_TRUE(run().ok());
  expect_all_equal_plain();
  EXPECT_EQ(paged_->segments_run(), 0u);
  EXPECT_EQ(e->value(), 0u);
}

TEST_P(Paged, WindowComputesFromABlittedInActivationAndLeavesTheRestUntouched) {
  auto e = event();
  paged_->set_schedule(cut_after_every_node(e.get()));
  core::Context stash_ctx;
  memory::GraphAllocator stash_alloc(device_->buffer_type());
  Tensor* in = stash_ctx.new_tensor(core::Type::kF32, {64, 4, 1, 1}, "stash_in");
  Tensor* out = stash_ctx.new_tensor(core::Type::kF32, {256, 1, 1, 1}, "stash_out");
  Tensor* both[] = {in, out};
  core::Graph stash = core::build_graph(both);
  ASSERT_TRUE(stash_alloc.allocate(stash).ok());
  auto* ins = static_cast<float*>(in->data);
  for (int i = 0; i < 256; ++i) ins[i] = 0.125f * static_cast<float>(i) - 7.0f;
  std::memset(out->data, 0, out->nbytes());

  paged_->set_window({"n2", "n3", {{"n1", in}}, {{"n3", out}}});
  chain_->fill_sentinel();
  ASSERT_TRUE(run().ok());
  EXPECT_TRUE(is_sentinel(*chain_->n0)) << "a segment outside the window ran";
  EXPECT_EQ(read(*chain_->n1), read(*in)) << "blit in";
  std::vector<float> want(256);
  for (int i = 0; i < 256; ++i) want[static_cast<size_t>(i)] = (ins[i] * 3.0f) * 0.5f;
  EXPECT_EQ(read(*chain_->n3), want);
  EXPECT_EQ(read(*out), want) << "blit out";
  // Only the window's segments signalled.
  EXPECT_EQ(e->value(), 4u);
  EXPECT_EQ(paged_->take_queued_signals().size(), 2u);

  // Cleared, everything runs again (byte-identical to never having had a window).
  paged_->set_window({});
  chain_->fill_sentinel();
  ASSERT_TRUE(run().ok());
  expect_all_equal_plain();
}

TEST_P(Paged, WindowWhoseEndpointsBelongToAnotherGraphRestrictsNothing) {
  auto e = event();
  paged_->set_schedule(cut_after_every_node(e.get()));
  paged_->set_window({"blk.3.l_out", "blk.7.l_out", {}, {}});
  chain_->fill_sentinel();
  ASSERT_TRUE(run().ok());
  expect_all_equal_plain();
}

// An idle window runs nothing; one for another graph that is marked only_this_graph runs
// nothing of this one either (the parts of a multi-split graph outside a band).
TEST_P(Paged, IdleWindowsRunNothing) {
  auto e = event();
  paged_->set_schedule(cut_after_every_node(e.get()));
  paged::EncodeWindow idle;
  idle.idle = true;
  paged::EncodeWindow elsewhere{"blk.3.l_out", "blk.7.l_out", {}, {}};
  elsewhere.only_this_graph = true;
  for (const paged::EncodeWindow& w : {idle, elsewhere}) {
    paged_->set_window(w);
    EXPECT_TRUE(paged_->active());
    chain_->fill_sentinel();
    ASSERT_TRUE(run().ok());
    EXPECT_TRUE(is_sentinel(*chain_->n0));
    EXPECT_TRUE(is_sentinel(*chain_->n3));
    EXPECT_TRUE(paged_->take_queued_signals().empty());
  }
  paged_->clear();
  chain_->fill_sentinel();
  ASSERT_TRUE(run().ok());
  expect_all_equal_plain();
}

TEST_P(Paged, GraphWithExactlyOneEndpointIsAnErrorAndTheBackendStaysUsable) {
  auto e = event();
  paged_->set_schedule(cut_after_every_node(e.get()));
  paged_->set_window({"n1", "blk.7.l_out", {}, {}});
  Status st = run();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("'n1'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("'blk.7.l_out'"), std::string::npos) << st.message();
  paged_->set_window({"n3", "n1", {}, {}});
  EXPECT_FALSE(run().ok()) << "endpoints out of order";
  paged_->clear();
  chain_->fill_sentinel();
  ASSERT_TRUE(run().ok());
  expect_all_equal_plain();
}

// The host sees each cut's signal, with the segment's writes, before later segments have run:
// the third segment waits for the host, which only releases it after checking.
TEST_P(Paged, SignalsFireProgressivelyAsSegmentsComplete) {
  auto e = event();
  auto admit = devices::host_device().make_event();
  ASSERT_TRUE(admit.ok());
  BoundarySchedule s = cut_after_every_node(e.get());
  s.waits.push_back({"n2", {admit->get(), 1}});
  paged_->set_schedule(s);
  chain_->fill_sentinel();

  std::thread queue;  // the synchronous host backend runs on the caller: give it a thread
  Status submitted;
  if (GetParam() == "partition") {
    submitted = paged_->compute_async(chain_->graph);
  } else {
    queue = std::thread([&] { submitted = paged_->compute_async(chain_->graph); });
  }
  ASSERT_EQ(e->wait(2, std::chrono::minutes(1)), backend::WaitResult::kReached);
  // Segments 1 and 2 are done and visible; segment 3 is held by the wait.
  EXPECT_EQ(read(*chain_->n0), expected_[0]);
  EXPECT_EQ(read(*chain_->n1), expected_[1]);
  EXPECT_TRUE(is_sentinel(*chain_->n2));
  EXPECT_TRUE(is_sentinel(*chain_->n3));
  EXPECT_EQ(e->value(), 2u);
  (*admit)->signal(1);
  ASSERT_EQ(e->wait(4, std::chrono::minutes(1)), backend::WaitResult::kReached);
  EXPECT_EQ(read(*chain_->n3), expected_[3]);  // visible once its signal is seen
  if (queue.joinable()) queue.join();
  EXPECT_TRUE(submitted.ok()) << submitted.message();
  ASSERT_TRUE(paged_->synchronize().ok());
  expect_all_equal_plain();
}

// The pager pattern: a long-lived host thread admits each run's later segments once it has
// seen the earlier ones complete.
TEST_P(Paged, WaitReleasedByALongLivedHostThread) {
  auto e = event();
  auto admit = devices::host_device().make_event();
  ASSERT_TRUE(admit.ok());
  constexpr int kRuns = 3;
  std::atomic<int> held_before_release{0};
  std::thread pager([&] {
    for (uint64_t r = 1; r <= kRuns; ++r) {
      if (e->wait(r, std::chrono::minutes(1)) != backend::WaitResult::kReached) return;
      if (is_sentinel(*chain_->n3)) held_before_release.fetch_add(1);
      (*admit)->signal(r);
    }
  });
  for (uint64_t r = 1; r <= kRuns; ++r) {
    BoundarySchedule s;
    s.cuts.push_back({"n1", {e.get(), r}});
    s.waits.push_back({"n2", {admit->get(), r}});
    paged_->set_schedule(s);
    chain_->fill_sentinel();
    ASSERT_TRUE(run().ok());
    expect_all_equal_plain();
  }
  pager.join();
  EXPECT_EQ(held_before_release.load(), kRuns);
}

TEST_P(Paged, WaitNeverReleasedTimesOutAndLeavesTheBackendUsable) {
  make_backend(100ms);
  auto e = event();
  auto never = devices::host_device().make_event();
  ASSERT_TRUE(never.ok());
  BoundarySchedule s = cut_after_every_node(e.get());
  s.waits.push_back({"n2", {never->get(), 1}});
  paged_->set_schedule(s);
  Status st = run();
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), ErrorCode::kInternal) << st.message();
  paged_->clear();
  chain_->fill_sentinel();
  ASSERT_TRUE(run().ok());
  expect_all_equal_plain();
}

INSTANTIATE_TEST_SUITE_P(Backends, Paged, ::testing::Values("host", "partition"));

}  // namespace
}  // namespace strata::paged
