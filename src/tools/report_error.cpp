#include <cstdio>

#include "tools/commands.h"

namespace strata::tools {

int report_error(const char* command, const Status& status) {
  std::fprintf(stderr, "strata %s: %s\n", command, status.message().c_str());
  return status.code() == ErrorCode::kInvalidArgument ? 2 : 1;
}

}  // namespace strata::tools
