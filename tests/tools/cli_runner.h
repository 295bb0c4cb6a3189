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

/// Runs a shell script and collects its output (stdout; add 2>&1 for stderr) and exit code.
inline Outcome run_script(const std::string& script) {
  Outcome o;
  FILE* p = popen(script.c_str(), "r");
  if (p == nullptr) return o;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) o.out.append(buf.data(), n);
  const int status = pclose(p);
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return o;
}

/// Runs `strata ARGS` through the shell and collects its output and exit code.
inline Outcome run(const std::string& args) {
  return run_script(std::string(STRATA_BIN) + " " + args + " 2>&1");
}

/// As run(), with `prefix` before the binary ("ulimit -v 200000;", "timeout 20") and
/// `redirect` after the 2>&1 that collects stderr, so that stdout alone can go elsewhere
/// (">/dev/full", ">&-") or be all that is collected ("2>/dev/null").
inline Outcome run_with(const std::string& prefix, const std::string& args,
                        const std::string& redirect) {
  return run_script(prefix + " " + std::string(STRATA_BIN) + " " + args + " 2>&1 " + redirect);
}

inline const std::string kStories = std::string(STRATA_SHARED_DIR) + "/models/stories260K.gguf";

inline bool have_stories() {
  return std::filesystem::exists(kStories);
}

}  // namespace strata::testing
