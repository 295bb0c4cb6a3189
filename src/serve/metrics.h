// The server's counters, in Prometheus' text format for /metrics.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace strata::serve {

struct Metrics {
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> requests_failed{0};
  std::atomic<uint64_t> prompt_tokens{0};
  std::atomic<uint64_t> generated_tokens{0};
  std::atomic<uint64_t> decode_steps{0};
  std::atomic<double> decode_seconds{0.0};

  /// The text /metrics returns, with the gauges read at call time.
  std::string prometheus(size_t queue_length, int busy_slots, int slots, int64_t kv_cells_used,
                         int64_t kv_cells) const;
};

}  // namespace strata::serve
