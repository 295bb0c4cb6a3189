// Runs the `strata` binary as a user would, for the CLI tests.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

namespace strata::testing {

struct Outcome {
  int exit_code = -1;
  std::string out;  // stdout and stderr together
};

/// Runs `strata ARGS` through the shell and collects its output and exit code.
inline Outcome run(const std::string& args) {
  const std::string cmd = std::string(STRATA_BIN) + " " + args + " 2>&1";
  Outcome o;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return o;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) o.out.append(buf.data(), n);
  const int status = pclose(p);
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return o;
}

inline const std::string kStories = std::string(STRATA_SHARED_DIR) + "/models/stories260K.gguf";

inline bool have_stories() {
  return std::filesystem::exists(kStories);
}

}  // namespace strata::testing
