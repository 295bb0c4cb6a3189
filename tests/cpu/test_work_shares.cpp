// Work shares (cpu/kernels/work_shares.h): every item goes to exactly one participant, each
// starts at the front of its own share, and a participant that is late finds its share taken
// from the back by the others.
#include "cpu/kernels/work_shares.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "cpu/thread_pool.h"

namespace strata::cpu {
namespace {

void pool_barrier(void* pool) {
  static_cast<ThreadPool*>(pool)->barrier();
}

KernelArgs args_for(ThreadPool& pool, int ith, int nth, WorkShare* shares) {
  KernelArgs a;
  a.ith = ith;
  a.nth = nth;
  a.barrier_fn = pool_barrier;
  a.barrier_ctx = &pool;
  a.shares = shares;
  return a;
}

TEST(WorkShares, EveryItemGoesToExactlyOneParticipant) {
  for (int n : {2, 3, 5}) {
    ThreadPool pool(n);
    auto shares = std::make_unique<WorkShare[]>(static_cast<size_t>(n));
    for (int64_t items : {0, 1, 2, 7, 100, 1000}) {
      std::vector<std::atomic<int>> taken(static_cast<size_t>(items));
      std::vector<std::vector<int64_t>> order(static_cast<size_t>(n));
      pool.run([&](int ith, int nth) {
        const KernelArgs a = args_for(pool, ith, nth, shares.get());
        ASSERT_TRUE(has_work_shares(a, items));
        publish_share(a, items);
        a.barrier();
        for (int64_t i = claim_item(a); i >= 0; i = claim_item(a)) {
          taken[static_cast<size_t>(i)].fetch_add(1, std::memory_order_relaxed);
          order[static_cast<size_t>(ith)].push_back(i);
        }
      });
      for (int64_t i = 0; i < items; ++i) {
        EXPECT_EQ(taken[static_cast<size_t>(i)].load(), 1) << n << " threads, item " << i;
      }
      // What a participant takes of its own share is a prefix of it, in order.
      for (int t = 0; t < n; ++t) {
        const Range r = split_range(items, t, n);
        int64_t expect = r.begin;
        for (int64_t i : order[static_cast<size_t>(t)]) {
          if (i >= r.begin && i < r.end) {
            EXPECT_EQ(i, expect++) << n << " threads";
          }
        }
      }
    }
  }
}

TEST(WorkShares, ALateParticipantsShareIsTakenFromTheBack) {
  constexpr int kThreads = 3;
  constexpr int64_t kItems = 60;
  ThreadPool pool(kThreads);
  auto shares = std::make_unique<WorkShare[]>(kThreads);
  std::atomic<int> done{0};
  std::vector<std::vector<int64_t>> order(kThreads);
  pool.run([&](int ith, int nth) {
    const KernelArgs a = args_for(pool, ith, nth, shares.get());
    publish_share(a, kItems);
    a.barrier();
    if (ith == 0) {
      // Late: claims only once the others have run out of items.
      while (done.load(std::memory_order_acquire) < nth - 1) std::this_thread::yield();
    }
    for (int64_t i = claim_item(a); i >= 0; i = claim_item(a)) {
      order[static_cast<size_t>(ith)].push_back(i);
    }
    if (ith != 0) done.fetch_add(1, std::memory_order_release);
  });
  EXPECT_TRUE(order[0].empty());
  const Range late = split_range(kItems, 0, kThreads);
  int64_t stolen = 0;
  for (int t = 1; t < kThreads; ++t) {
    int64_t last = kItems;
    for (int64_t i : order[static_cast<size_t>(t)]) {
      if (i >= late.end) continue;
      EXPECT_LT(i, last) << "thread " << t << " takes the late share from its back";
      last = i;
      ++stolen;
    }
  }
  EXPECT_EQ(stolen, late.end - late.begin);
}

TEST(WorkShares, NoSharesOrOneParticipantMeansAStaticSplit) {
  ThreadPool pool(1);
  WorkShare one;
  EXPECT_FALSE(has_work_shares(args_for(pool, 0, 1, &one), 10));
  EXPECT_FALSE(has_work_shares(args_for(pool, 0, 2, nullptr), 10));
  EXPECT_FALSE(has_work_shares(args_for(pool, 0, 2, &one), int64_t{1} << 32));
}

}  // namespace
}  // namespace strata::cpu
