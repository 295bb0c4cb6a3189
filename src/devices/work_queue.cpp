#include "devices/work_queue.h"

#include <utility>

namespace strata::devices {

WorkQueue::WorkQueue(std::function<void()> on_start)
    : on_start_(std::move(on_start)), thread_([this](std::stop_token stop) { serve(stop); }) {}

WorkQueue::~WorkQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  pushed_cv_.notify_one();
  thread_.request_stop();
  thread_.join();
}

void WorkQueue::push(Task task, bool runs_after_error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.push_back({std::move(task), runs_after_error});
    ++n_pushed_;
  }
  pushed_cv_.notify_one();
}

Status WorkQueue::synchronize() {
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t target = n_pushed_;
  done_cv_.wait(lock, [&] { return n_done_ >= target; });
  failed_.store(false, std::memory_order_release);
  return std::exchange(error_, Status());
}

bool WorkQueue::failed() const {
  return failed_.load(std::memory_order_acquire);
}

Status WorkQueue::kept_error() {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

void WorkQueue::serve(std::stop_token stop) {
  if (on_start_) on_start_();
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    pushed_cv_.wait(lock, [this] { return !entries_.empty() || closing_; });
    if (entries_.empty()) return;
    Entry entry = std::move(entries_.front());
    entries_.pop_front();
    const bool skip = !error_.ok() && !entry.runs_after_error;
    lock.unlock();
    // A task's failed allocation is its error like any other: nothing may unwind out of the
    // thread, and the caller learns of it at synchronize().
    Status status =
        skip ? Status() : out_of_memory_as_error("device queue", [&] { return entry.task(stop); });
    entry.task = nullptr;  // release what the task captured before anyone is told it is done
    lock.lock();
    if (!status.ok() && error_.ok()) {
      error_ = std::move(status);
      failed_.store(true, std::memory_order_release);
    }
    ++n_done_;
    done_cv_.notify_all();
  }
}

}  // namespace strata::devices
