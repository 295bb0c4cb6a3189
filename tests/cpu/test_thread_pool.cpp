// The persistent thread pool: every participant runs once per run, the caller is thread 0,
// and the barrier orders memory (run these under TSan: -DSTRATA_TSAN=ON).
#include "cpu/thread_pool.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <vector>

namespace strata::cpu {
namespace {

TEST(ThreadPool, RunsEveryParticipantOnceWithCallerAsZero) {
  for (int n : {1, 2, 3, 5}) {
    ThreadPool pool(n);
    ASSERT_EQ(pool.size(), n);
    std::vector<int> calls(static_cast<size_t>(n), 0);  // each slot written by one thread only
    std::thread::id zero_id;
    pool.run([&](int ith, int nth) {
      EXPECT_EQ(nth, n);
      ++calls[static_cast<size_t>(ith)];
      if (ith == 0) zero_id = std::this_thread::get_id();
    });
    for (int c : calls) EXPECT_EQ(c, 1);
    EXPECT_EQ(zero_id, std::this_thread::get_id());
  }
}

TEST(ThreadPool, NonPositiveSizeMeansOneThread) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.size(), 1);
  int calls = 0;
  pool.run([&](int, int nth) {
    EXPECT_EQ(nth, 1);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
}

TEST(ThreadPool, ManyShortRuns) {
  ThreadPool pool(3);
  std::atomic<int> total{0};
  for (int i = 0; i < 5000; ++i)
    pool.run([&](int, int) { total.fetch_add(1, std::memory_order_relaxed); });
  EXPECT_EQ(total.load(), 3 * 5000);
}

// Each round every thread writes its own slot (plain memory), waits at the barrier, then checks
// every other slot: only the barrier's ordering makes that race-free, which TSan verifies.
TEST(ThreadPool, BarrierOrdersWritesOverManyIterations) {
  constexpr int kRounds = 5000;
  for (int n : {2, 3, 4}) {
    ThreadPool pool(n);
    std::vector<int> slots(static_cast<size_t>(n), -1);
    std::atomic<int> mismatches{0};
    pool.run([&](int ith, int nth) {
      for (int round = 0; round < kRounds; ++round) {
        slots[static_cast<size_t>(ith)] = round;
        pool.barrier();
        for (int j = 0; j < nth; ++j) {
          if (slots[static_cast<size_t>(j)] != round)
            mismatches.fetch_add(1, std::memory_order_relaxed);
        }
        // Nobody may overwrite a slot for the next round before everyone has read this one.
        pool.barrier();
      }
    });
    EXPECT_EQ(mismatches.load(), 0) << n << " threads";
  }
}

// Work done before a barrier by one thread is seen after it by all, across separate runs too.
TEST(ThreadPool, BarrierPublishesProducerWrites) {
  ThreadPool pool(3);
  std::vector<int64_t> data(1000, 0);
  for (int run = 0; run < 200; ++run) {
    std::atomic<int> bad{0};
    pool.run([&](int ith, int) {
      if (ith == run % 3) {
        for (size_t i = 0; i < data.size(); ++i) data[i] = run * 1000 + static_cast<int64_t>(i);
      }
      pool.barrier();
      for (size_t i = 0; i < data.size(); ++i) {
        if (data[i] != run * 1000 + static_cast<int64_t>(i))
          bad.fetch_add(1, std::memory_order_relaxed);
      }
    });
    ASSERT_EQ(bad.load(), 0) << "run " << run;
  }
}

// After the spin phase the workers sleep; a run must wake them.
TEST(ThreadPool, WakesSleepingWorkers) {
  ThreadPool pool(3);
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    std::atomic<int> calls{0};
    pool.run([&](int, int) {
      calls.fetch_add(1);
      pool.barrier();
    });
    EXPECT_EQ(calls.load(), 3);
  }
}

TEST(ThreadPool, RunsFromSeveralThreadsAreSerialized) {
  ThreadPool pool(2);
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  std::atomic<int> total{0};
  const auto submit = [&] {
    for (int i = 0; i < 300; ++i) {
      pool.run([&](int ith, int) {
        if (ith == 0 && inside.fetch_add(1) != 0) overlaps.fetch_add(1);
        pool.barrier();
        total.fetch_add(1);
        pool.barrier();
        if (ith == 0) inside.fetch_sub(1);
      });
    }
  };
  std::thread a(submit);
  std::thread b(submit);
  a.join();
  b.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(total.load(), 2 * 300 * 2);
}

TEST(ThreadPool, IdleWorkRunsWhileWaitingAndNeverHoldsTheBarrier) {
  ThreadPool pool(2);
  // Participant 1 waits while 0 sleeps; its idle work never runs out, yet the barrier opens.
  std::atomic<int> steps{0};
  const auto forever = [](void* n) {
    static_cast<std::atomic<int>*>(n)->fetch_add(1, std::memory_order_relaxed);
    return true;
  };
  std::atomic<bool> after{false};
  pool.run([&](int ith, int) {
    if (ith == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    pool.barrier(ThreadPool::IdleWork{forever, &steps});
    after.store(true);
  });
  EXPECT_TRUE(after.load());
  EXPECT_GT(steps.load(), 0);
  // Work that ends is not called again.
  std::atomic<int> calls{0};
  const auto once = [](void* n) {
    static_cast<std::atomic<int>*>(n)->fetch_add(1, std::memory_order_relaxed);
    return false;
  };
  pool.run([&](int ith, int) {
    if (ith == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    pool.barrier(ith == 1 ? ThreadPool::IdleWork{once, &calls} : ThreadPool::IdleWork{});
  });
  EXPECT_EQ(calls.load(), 1);
}

// Sanitizers reserve terabytes of address space, which a limit on it would break.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
// In a child process: limits the address space to what the process has now plus 64 MiB (too
// little for 63 thread stacks), makes a pool of 64 and exits 0 if it reported the refusal
// and still runs everything on the caller.
void start_pool_without_address_space() {
  size_t pages = 0;
  std::ifstream("/proc/self/statm") >> pages;
  const auto limit =
      static_cast<rlim_t>(pages * static_cast<size_t>(sysconf(_SC_PAGESIZE)) + (size_t{64} << 20));
  const rlimit rl{limit, limit};
  if (setrlimit(RLIMIT_AS, &rl) != 0) std::_Exit(2);
  ThreadPool pool(64);
  int calls = 0;
  pool.run([&](int, int nth) { calls += nth; });
  const bool ok = !pool.start_status().ok() && pool.size() == 1 && calls == 1 &&
                  pool.start_status().message().find("cannot start worker thread") == 0;
  std::_Exit(ok ? 0 : 1);
}

TEST(ThreadPool, RefusedThreadsAreAStatusAndThePoolStillRuns) {
  EXPECT_EXIT(start_pool_without_address_space(), ::testing::ExitedWithCode(0), "");
}
#endif

}  // namespace
}  // namespace strata::cpu
