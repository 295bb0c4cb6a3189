#include "tools/output.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace strata::tools {
namespace {

// The errno of the first failed write to stdout, kept because the C stream only remembers
// that one failed, not why.
int first_stdout_errno = 0;

Status stdout_error(int err) {
  if (first_stdout_errno == 0) first_stdout_errno = err;
  std::string message = "cannot write to standard output";
  if (first_stdout_errno != 0) message += std::string(": ") + std::strerror(first_stdout_errno);
  return error(ErrorCode::kIo, message);
}

}  // namespace

Status write_stdout(std::string_view text) {
  errno = 0;
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    return stdout_error(errno);
  }
  return check_stdout();
}

Status check_stdout() {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) return stdout_error(errno);
  return {};
}

bool stderr_ok() {
  return std::fflush(stderr) == 0 && std::ferror(stderr) == 0;
}

}  // namespace strata::tools
