// An in-order queue of tasks served by one thread: the engine of an asynchronous backend.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <stop_token>
#include <thread>

#include "core/status.h"

namespace strata::devices {

/// Tasks run one after another, in the order they were pushed, on the queue's own thread.
/// The first error a task returns is kept; until synchronize() reports it, later tasks are
/// skipped unless they were pushed to run after errors (signals, so nobody waits forever).
class WorkQueue {
 public:
  /// One unit of work. `stop` is triggered when the queue is being destroyed, so a task that
  /// blocks (a wait on an event) can give up instead of holding up destruction.
  using Task = std::function<Status(std::stop_token stop)>;

  /// Starts the thread; it calls `on_start` (e.g. to pin itself) before the first task.
  explicit WorkQueue(std::function<void()> on_start = {});
  /// Triggers the stop token, runs (or skips) every task still queued, joins the thread.
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  /// Appends a task. With `runs_after_error` it runs even while an error is kept.
  void push(Task task, bool runs_after_error = false);
  /// Waits until every task pushed so far has finished; returns the kept error and clears it.
  Status synchronize();
  /// Whether an error is kept now, and which (a task that runs after errors may ask).
  bool failed() const;
  Status kept_error();

 private:
  struct Entry {
    Task task;
    bool runs_after_error;
  };
  void serve(std::stop_token stop);

  std::function<void()> on_start_;
  std::mutex mutex_;
  std::condition_variable pushed_cv_;  ///< a task was pushed, or the queue is closing
  std::condition_variable done_cv_;    ///< a task has finished
  std::deque<Entry> entries_;
  uint64_t n_pushed_ = 0;
  uint64_t n_done_ = 0;
  bool closing_ = false;
  Status error_;
  std::atomic<bool> failed_{false};  ///< !error_.ok(), readable without the lock
  std::jthread thread_;              ///< last: starts once everything it uses is constructed
};

}  // namespace strata::devices
