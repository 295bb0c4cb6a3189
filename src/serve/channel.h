// What the batching loop tells one HTTP request: its tokens as they come, then its end. The
// loop thread pushes, the request's thread pops; a request that goes away (a client that
// disconnected) marks the channel so the loop cancels it at its next token.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>

#include "core/status.h"
#include "engine/batch_loop.h"

namespace strata::serve {

struct Event {
  bool done = false;
  int32_t token = -1;  ///< when !done
  engine::FinishReason reason = engine::FinishReason::kStop;
  Status error;
  bool has_probs = false;
  engine::TokenProbs probs;  ///< when has_probs
};

class Channel {
 public:
  void push(Event e) {
    {
      std::lock_guard lock(mu_);
      events_.push_back(std::move(e));
    }
    cv_.notify_one();
  }
  /// The next event, or nothing after `timeout`.
  std::optional<Event> pop(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [this] { return !events_.empty(); })) return std::nullopt;
    Event e = std::move(events_.front());
    events_.pop_front();
    return e;
  }
  void abandon() { abandoned_ = true; }
  bool abandoned() const { return abandoned_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> events_;
  std::atomic<bool> abandoned_{false};
};

}  // namespace strata::serve
