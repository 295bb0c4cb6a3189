// The `strata` subcommands. Each takes its arguments (after the subcommand name) and returns
// the process exit code: 0 success, 1 failure while running, 2 bad usage.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace strata::tools {

int run_command(const std::vector<std::string>& args);
int inspect_command(const std::vector<std::string>& args);
int synth_command(const std::vector<std::string>& args);
int devices_command(const std::vector<std::string>& args);
int bench_command(const std::vector<std::string>& args);
int perplexity_command(const std::vector<std::string>& args);
int tokenize_command(const std::vector<std::string>& args);
int serve_command(const std::vector<std::string>& args);

/// Prints "strata <cmd>: <message>" to stderr and returns the exit code for the error.
int report_error(const char* command, const Status& status);

}  // namespace strata::tools
