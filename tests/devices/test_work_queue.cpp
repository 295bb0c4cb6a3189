// The in-order work queue under asynchronous backends (run under TSan: -DSTRATA_TSAN=ON).
#include "devices/work_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace strata::devices {
namespace {

using namespace std::chrono_literals;

TEST(WorkQueue, RunsTasksInOrderOnItsOwnThread) {
  WorkQueue q;
  std::vector<int> order;  // only the queue thread writes it before synchronize()
  std::thread::id queue_thread;
  for (int i = 0; i < 100; ++i) {
    q.push([&, i](std::stop_token) {
      order.push_back(i);
      queue_thread = std::this_thread::get_id();
      return Status();
    });
  }
  ASSERT_TRUE(q.synchronize().ok());
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);
  EXPECT_NE(queue_thread, std::this_thread::get_id());
}

TEST(WorkQueue, CallsOnStartFirst) {
  std::vector<int> log;
  {
    WorkQueue q([&] { log.push_back(0); });
    q.push([&](std::stop_token) {
      log.push_back(1);
      return Status();
    });
    ASSERT_TRUE(q.synchronize().ok());
  }
  EXPECT_EQ(log, (std::vector<int>{0, 1}));
}

// A slow task then a flag: the flag is only ever seen after the slow task's write.
TEST(WorkQueue, LaterTasksSeeEarlierTasksEffects) {
  WorkQueue q;
  int payload = 0;
  std::atomic<bool> flag{false};
  q.push([&](std::stop_token) {
    std::this_thread::sleep_for(20ms);
    payload = 42;
    return Status();
  });
  q.push([&](std::stop_token) {
    flag.store(true, std::memory_order_release);
    return Status();
  });
  while (!flag.load(std::memory_order_acquire)) std::this_thread::yield();
  EXPECT_EQ(payload, 42);
  EXPECT_TRUE(q.synchronize().ok());
}

TEST(WorkQueue, KeepsTheFirstErrorAndSkipsUntilSynchronize) {
  WorkQueue q;
  std::vector<int> ran;
  auto task = [&](int id, Status st) {
    return [&ran, id, st](std::stop_token) {
      ran.push_back(id);
      return st;
    };
  };
  q.push(task(1, Status()));
  q.push(task(2, error(ErrorCode::kOutOfRange, "first")));
  q.push(task(3, error(ErrorCode::kInternal, "second")));
  q.push(task(4, Status()), /*runs_after_error=*/true);
  const Status st = q.synchronize();
  EXPECT_EQ(st.code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(st.message(), "first");
  EXPECT_EQ(ran, (std::vector<int>{1, 2, 4}));
  q.push(task(5, Status()));
  EXPECT_TRUE(q.synchronize().ok());
  EXPECT_EQ(ran, (std::vector<int>{1, 2, 4, 5}));
}

TEST(WorkQueue, DestructionRunsQueuedTasksAndStopsBlockedOnes) {
  std::atomic<int> ran{0};
  bool saw_stop = false;
  {
    WorkQueue q;
    q.push([&](std::stop_token stop) {
      // Blocks until the destructor asks it to stop.
      while (!stop.stop_requested()) std::this_thread::sleep_for(1ms);
      saw_stop = true;
      return Status();
    });
    for (int i = 0; i < 10; ++i) {
      q.push([&](std::stop_token) {
        ran.fetch_add(1);
        return Status();
      });
    }
  }
  EXPECT_TRUE(saw_stop);
  EXPECT_EQ(ran.load(), 10);
}

TEST(WorkQueue, PushAndSynchronizeFromManyThreads) {
  WorkQueue q;
  std::atomic<int> total{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        q.push([&](std::stop_token) {
          total.fetch_add(1, std::memory_order_relaxed);
          return Status();
        });
        if (i % 50 == 0) {
          EXPECT_TRUE(q.synchronize().ok());
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_TRUE(q.synchronize().ok());
  EXPECT_EQ(total.load(), 800);
}

}  // namespace
}  // namespace strata::devices
