// Allocation-failure injection through operator new: every container, string and object the
// engine allocates, on any thread, is made to fail in turn during a model load, a session's
// creation, a prefill and a decode step, on the host, over two partitions (layer split) and
// over a tensor split. Each failure must come back as an error value (kOutOfMemory), never as
// an escaped exception or a crash; a session whose decode failed stays usable and computes
// the same logits as one that never failed. Under ASan, LeakSanitizer checks nothing leaks.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "devices/host_device.h"
#include "devices/registry.h"
#include "engine/batch_loop.h"
#include "engine/layout.h"
#include "engine/session.h"
#include "golden.h"
#include "memory/buffer.h"
#include "meta/meta_device.h"
#include "model/model.h"
#include "new_injection.h"

namespace strata::engine {
namespace {

const std::string kModel = testing::model_path("stories260K.gguf");
const std::vector<int32_t> kPrompt = {1, 403, 407, 261, 378, 95, 292, 44, 262, 300};
const int32_t kNext[] = {300};

struct SweepResult {
  int64_t points = 0;   // allocations that were made to fail
  int64_t escaped = 0;  // of which the failure escaped as an exception
};

// Runs `step` with the n-th operator new failing, for n = 0, 1, ... until a run makes no more
// than n allocations (it must then succeed). Every failed run must return kOutOfMemory, and is
// followed by `after_failure(n)` (nothing failing then), where given.
SweepResult sweep(const std::function<Status()>& step,
                  const std::function<void(int64_t)>& after_failure = {}) {
  SweepResult r;
  for (int64_t n = 0;; ++n) {
    Status st;
    bool escaped = false;
    strata::testing::arm_new_failure(n);
    try {
      st = step();
    } catch (const std::bad_alloc&) {
      escaped = true;
    }
    const int64_t calls = strata::testing::disarm_new_failure();
    if (after_failure && !st.ok() && !escaped) after_failure(n);
    if (calls <= n) {
      EXPECT_TRUE(st.ok()) << st.message();
      r.points = n;
      return r;
    }
    if (escaped) {
      ++r.escaped;
      ADD_FAILURE() << "the failure of allocation " << n << " escaped as std::bad_alloc";
      continue;
    }
    if (st.ok() && strata::testing::failed_a_nothrow_new()) continue;  // it did without
    if (st.ok()) strata::testing::print_failed_allocation_site();
    EXPECT_FALSE(st.ok()) << "allocation " << n << " failed but the step succeeded";
    EXPECT_EQ(st.code(), ErrorCode::kOutOfMemory) << "allocation " << n << ": " << st.message();
  }
}

struct Points {
  int64_t load = 0, create = 0, prefill = 0, decode = 0;
};

// Sweeps a load, a creation, a prefill and a decode step for the layout `lp` (no devices: the
// host alone), then checks that the session computes what a session that never failed does.
// `recovers`: whether the session must afterwards compute what a session that never failed does.
Points sweep_all(const LayoutParams& lp, const char* what, const KvPagingConfig& paging = {},
                 bool recovers = true) {
  Points p;
  auto layout = make_layout(5, lp);
  EXPECT_TRUE(layout.ok()) << layout.status().message();
  if (!layout.ok()) return p;
  const model::WeightPlacement placement = weight_placement(*layout, devices::host_device());
  const SweepResult load = sweep([&]() -> Status {
    auto m = model::Model::load(kModel, placement);
    return m.ok() ? Status{} : m.status();
  });
  auto model = model::Model::load(kModel, placement);
  EXPECT_TRUE(model.ok()) << model.status().message();
  if (!model.ok()) return p;
  SessionParams sp;
  sp.n_ctx = 64;
  sp.n_ubatch = 4;
  sp.kv_paging = paging;
  const auto create = [&]() {
    return Session::create(**model, devices::host_device(), *layout, sp);
  };
  const SweepResult created = sweep([&]() -> Status {
    auto s = create();
    return s.ok() ? Status{} : s.status();
  });

  // The logits of a session that never saw a failure.
  auto clean = create();
  EXPECT_TRUE(clean.ok()) << clean.status().message();
  if (!clean.ok()) return p;
  EXPECT_TRUE((*clean)->decode(kPrompt).ok());
  const std::vector<float> want_prompt((*clean)->logits().begin(), (*clean)->logits().end());
  EXPECT_TRUE((*clean)->decode(kNext).ok());
  const std::vector<float> want_next((*clean)->logits().begin(), (*clean)->logits().end());

  auto session = create();
  EXPECT_TRUE(session.ok()) << session.status().message();
  if (!session.ok()) return p;
  Session& s = **session;
  // Right after each failed prefill, the session must compute what one that never failed
  // does (checked at every point: a state a failure leaves behind may be healed by the next
  // failing runs before the end of the sweep, as a failed signal's range overwritten by the
  // next one once was, letting a late waiter compute from inputs nobody produced).
  int64_t wrong_after = -1;
  const auto recovered = [&](int64_t n) {
    if (!recovers || wrong_after >= 0) return;
    const Status st = s.decode(kPrompt);
    if (!st.ok() || std::vector<float>(s.logits().begin(), s.logits().end()) != want_prompt) {
      wrong_after = n;
    }
    s.reset();
  };
  const SweepResult prefill = sweep(
      [&]() -> Status {
        const Status st = s.decode(kPrompt);
        if (st.ok()) {
          s.reset();
          return st;
        }
        if (s.n_past() != 0)
          return error(ErrorCode::kInternal, "a failed prefill left cells behind");
        return st;
      },
      recovered);
  EXPECT_EQ(wrong_after, -1) << what << ": wrong logits right after allocation " << wrong_after
                             << " failed in a prefill";
  EXPECT_TRUE(s.decode(kPrompt).ok());
  if (recovers) {
    EXPECT_EQ(std::vector<float>(s.logits().begin(), s.logits().end()), want_prompt) << what;
  }
  const SweepResult decode = sweep([&]() -> Status {
    const Status st = s.decode(kNext);
    const int64_t want = static_cast<int64_t>(kPrompt.size()) + (st.ok() ? 1 : 0);
    if (s.n_past() != want) return error(ErrorCode::kInternal, "a failed decode moved n_past");
    return st;
  });
  if (recovers) {
    EXPECT_EQ(std::vector<float>(s.logits().begin(), s.logits().end()), want_next) << what;
  }

  p = {load.points, created.points, prefill.points, decode.points};
  std::printf(
      "%s: operator new failed at each of %lld allocations in model load, %lld at session "
      "creation, %lld in a prefill and %lld in a decode step; %lld escaped\n",
      what, static_cast<long long>(p.load), static_cast<long long>(p.create),
      static_cast<long long>(p.prefill), static_cast<long long>(p.decode),
      static_cast<long long>(load.escaped + created.escaped + prefill.escaped + decode.escaped));
  return p;
}

TEST(OperatorNewFailure, HostEndsInAnErrorAtEveryAllocation) {
  if (!std::filesystem::exists(kModel)) GTEST_SKIP();
  const Points p = sweep_all({}, "host");
  EXPECT_GT(p.load, 100);
  EXPECT_GT(p.create, 10);
  EXPECT_GT(p.prefill, 10);
  EXPECT_GT(p.decode, 10);
}

TEST(OperatorNewFailure, LayerSplitOverPartitionsEndsInAnErrorAtEveryAllocation) {
  if (!std::filesystem::exists(kModel)) GTEST_SKIP();
  auto parts = devices::make_partitions(2, 0);
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  LayoutParams lp;
  lp.devices = *parts;
  lp.n_gpu_layers = 3;  // the host, and two devices
  const Points p = sweep_all(lp, "layer split");
  EXPECT_GT(p.prefill, 10);
}

TEST(OperatorNewFailure, TensorSplitEndsInAnErrorAtEveryAllocation) {
  if (!std::filesystem::exists(kModel)) GTEST_SKIP();
  auto parts = devices::make_partitions(2, 0);
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  auto meta = meta::MetaDevice::create(*parts, {});
  ASSERT_TRUE(meta.ok()) << meta.status().message();
  LayoutParams lp;
  lp.devices = {meta->get()};
  lp.n_gpu_layers = 99;
  // Once rare (about one run in five): NaN logits after the sweep. A meta buffer registered a
  // tensor's shards and then failed to record that it had, so the registration outlived the
  // buffer and a later tensor at the same address found shards that were gone. Fixed (room is
  // made before registering); a failing queue also fails the queues its signals release.
  const Points p = sweep_all(lp, "tensor split", {});
  EXPECT_GT(p.prefill, 10);
}

// Continuous batching: two requests of different prompts served together to the end, with
// every allocation of their submission and of every step failing in turn. A failed step ends
// the active requests with kError; the loop then serves the next ones as if nothing happened.
TEST(OperatorNewFailure, BatchLoopEndsRequestsWithAnErrorAtEveryAllocation) {
  if (!std::filesystem::exists(kModel)) GTEST_SKIP();
  auto model = model::Model::load(kModel, memory::host_buffer_type());
  ASSERT_TRUE(model.ok()) << model.status().message();
  SessionParams sp;
  sp.n_ctx = 128;
  sp.n_ubatch = 8;
  auto session = Session::create(**model, devices::host_device(), sp);
  ASSERT_TRUE(session.ok()) << session.status().message();
  auto loop = BatchLoop::create(**session, {2, 0});
  ASSERT_TRUE(loop.ok()) << loop.status().message();

  // Both requests' tokens, or the error that ended one of them.
  const auto serve_two = [&](std::vector<int32_t>(&out)[2]) -> Status {
    Status failed;
    for (int r = 0; r < 2; ++r) {
      out[r].clear();
      Request req;
      // The caller's own allocations (the prompt, the callbacks) fail here, not in the engine.
      try {
        req.prompt = r == 0 ? kPrompt : std::vector<int32_t>(kPrompt.begin(), kPrompt.begin() + 5);
        req.max_tokens = 6;
        req.on_token = [&out, r](int32_t t) {
          out[r].push_back(t);
          return true;
        };
        req.on_done = [&failed](FinishReason why, const Status& st) {
          if (why == FinishReason::kError && failed.ok()) failed = st;
        };
      } catch (const std::bad_alloc&) {
        return error(ErrorCode::kOutOfMemory, "the test's request");
      }
      STRATA_RETURN_IF_ERROR((*loop)->submit(std::move(req)));
    }
    while (!(*loop)->idle()) {
      const Status st = (*loop)->step();
      if (!st.ok()) return st;
    }
    return failed;
  };
  std::vector<int32_t> want[2], got[2];
  ASSERT_TRUE(serve_two(want).ok());
  ASSERT_EQ(want[0].size(), 6u);
  const SweepResult r = sweep([&] { return serve_two(got); });
  EXPECT_EQ(got[0], want[0]);
  EXPECT_EQ(got[1], want[1]);
  std::printf(
      "batch loop: operator new failed at each of %lld allocations of two requests; %lld "
      "escaped\n",
      static_cast<long long>(r.points), static_cast<long long>(r.escaped));
  EXPECT_GT(r.points, 100);
}

// KV paging: half of the layers' KV resident, the home in host memory, a pager thread moving
// layers in and out while the prefill and decode run.
TEST(OperatorNewFailure, KvPagingEndsInAnErrorAtEveryAllocation) {
  if (!std::filesystem::exists(kModel)) GTEST_SKIP();
  auto parts = devices::make_partitions(1, 0);
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  LayoutParams lp;
  lp.devices = *parts;
  lp.n_gpu_layers = 99;
  KvPagingConfig paging;
  paging.resident_fraction = 0.5;
  const Points p = sweep_all(lp, "kv paging", paging);
  EXPECT_GT(p.prefill, 10);
}

}  // namespace
}  // namespace strata::engine
