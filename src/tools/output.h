// Checked writes to the standard streams: a command whose output was lost (a full disk, a
// closed descriptor) ends with exit code 1 and says so, instead of reporting success.
#pragma once

#include <string_view>

#include "core/status.h"

namespace strata::tools {

/// Writes `text` to stdout and flushes it, so that streamed output is seen at once. A failure
/// is kIo naming the reason; later check_stdout() calls report it too.
Status write_stdout(std::string_view text);

/// Flushes stdout and reports whether every write to it since the start succeeded: kIo
/// "cannot write to standard output: REASON" otherwise.
Status check_stdout();

/// Flushes stderr; false if any write to it failed (there is nowhere left to say so).
bool stderr_ok();

}  // namespace strata::tools
