// libFuzzer target: arbitrary bytes as a command line (arguments separated by NUL bytes)
// through the flag parser with every kind of flag, and through the range checks.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/flags.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.emplace_back();
    } else {
      args.back() += static_cast<char>(data[i]);
    }
  }
  int64_t threads = 0, ctx = 0;
  float temp = 0.8f;
  std::string model;
  bool help = false;
  strata::tools::FlagSet flags;
  flags.add_int({"-t", "--threads"}, &threads, "threads");
  flags.add_int({"-c", "--ctx-size"}, &ctx, "context");
  flags.add_float({"--temp"}, &temp, "temperature");
  flags.add_string({"-m", "--model"}, &model, "model");
  flags.add_bool({"-h", "--help"}, &help, "help");
  std::vector<std::string> positional;
  const bool with_positional = !args.empty() && !args[0].empty() && args[0][0] == 'p';
  if (flags.parse(args, with_positional ? &positional : nullptr).ok()) {
    (void)strata::tools::check_range("-t", threads, 0, 1024);
    (void)strata::tools::check_range("-c", ctx, 0, int64_t{1} << 24);
  }
  (void)flags.usage();
  return 0;
}
