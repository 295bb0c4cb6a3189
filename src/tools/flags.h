// A small command-line parser for llama.cpp-style flags ("-ub 256", "--top-k 40").
// Multi-letter single-dash flags rule out the usual libraries, so this one is ours.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace strata::tools {

class FlagSet {
 public:
  /// Registers a flag that takes a value. `names` like {"-t", "--threads"}.
  void add_int(std::vector<std::string> names, int64_t* out, std::string help);
  void add_float(std::vector<std::string> names, float* out, std::string help);
  void add_string(std::vector<std::string> names, std::string* out, std::string help);
  /// Registers a flag without a value.
  void add_bool(std::vector<std::string> names, bool* out, std::string help);

  /// Parses args (without the program and subcommand names). Arguments that are not flags
  /// go to `positional` when given, else are errors. Unknown flags, missing or malformed
  /// values are kInvalidArgument naming the flag.
  Status parse(const std::vector<std::string>& args,
               std::vector<std::string>* positional = nullptr);
  /// One line per flag.
  std::string usage() const;

 private:
  struct Flag {
    std::vector<std::string> names;
    bool takes_value;
    std::function<Status(const std::string& name, const std::string& value)> set;
    std::string help;
  };
  const Flag* find(std::string_view name) const;
  std::vector<Flag> flags_;
};

/// kInvalidArgument "FLAG must be in [lo, hi], got v" unless lo <= v <= hi.
Status check_range(const char* flag, int64_t v, int64_t lo, int64_t hi);

}  // namespace strata::tools
