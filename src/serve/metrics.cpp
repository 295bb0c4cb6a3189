#include "serve/metrics.h"

#include <cstdio>

namespace strata::serve {
namespace {

void add(std::string& out, const char* name, const char* type, const char* help, double v) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "# HELP strata_%s %s\n# TYPE strata_%s %s\nstrata_%s %.17g\n",
                name, help, name, type, name, v);
  out += buf;
}

}  // namespace

std::string Metrics::prometheus(size_t queue_length, int busy_slots, int slots,
                                int64_t kv_cells_used, int64_t kv_cells) const {
  std::string out;
  const double gen = static_cast<double>(generated_tokens.load());
  const double secs = decode_seconds.load();
  add(out, "requests_total", "counter", "Completion requests received.",
      static_cast<double>(requests.load()));
  add(out, "requests_failed_total", "counter", "Requests answered with an error.",
      static_cast<double>(requests_failed.load()));
  add(out, "prompt_tokens_total", "counter", "Prompt tokens of accepted requests.",
      static_cast<double>(prompt_tokens.load()));
  add(out, "generated_tokens_total", "counter", "Tokens generated.", gen);
  add(out, "decode_steps_total", "counter", "Batches evaluated.",
      static_cast<double>(decode_steps.load()));
  add(out, "tokens_per_second", "gauge", "Generated tokens per second of decoding so far.",
      secs > 0 ? gen / secs : 0.0);
  add(out, "queue_length", "gauge", "Requests waiting for a slot.",
      static_cast<double>(queue_length));
  add(out, "slots_busy", "gauge", "Slots serving a request.", busy_slots);
  add(out, "slots", "gauge", "Slots.", slots);
  add(out, "kv_cells_used", "gauge", "KV cache cells holding tokens.",
      static_cast<double>(kv_cells_used));
  add(out, "kv_cells", "gauge", "KV cache cells.", static_cast<double>(kv_cells));
  return out;
}

}  // namespace strata::serve
