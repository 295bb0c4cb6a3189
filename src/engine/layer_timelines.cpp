#include "engine/layer_timelines.h"

#include <string>

namespace strata::engine {

Status LayerTimelines::wait(int64_t layer, uint64_t value, std::stop_token stop,
                            const char* who) const {
  const backend::WaitResult r = of(layer).wait(value, std::chrono::minutes(5), stop);
  if (r == backend::WaitResult::kReached) return {};
  if (r == backend::WaitResult::kStopped)
    return error(ErrorCode::kInternal, std::string(who) + ": stopped");
  return error(ErrorCode::kInternal, std::string(who) + ": layer " + std::to_string(layer) +
                                         " never completed (timeline value " +
                                         std::to_string(value) + ")");
}

void StallClock::add_to(std::atomic<uint64_t>& stalls, std::atomic<uint64_t>& stall_ns) const {
  if (since_ == Clock::time_point{}) return;
  ++stalls;
  stall_ns += static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - since_).count());
}

}  // namespace strata::engine
