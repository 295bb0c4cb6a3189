// Byte sizes as users write them on the command line ("--device-mem 512M").
#pragma once

#include <cstddef>
#include <string_view>

#include "core/status.h"

namespace strata::devices {

/// Parses a whole number with an optional K, M, G or T suffix (powers of 1024, either case,
/// optionally followed by "B" or "iB"): "512M", "2G", "4096". kInvalidArgument naming the
/// text for anything else or for a size that does not fit in size_t.
Result<size_t> parse_byte_size(std::string_view text);

}  // namespace strata::devices
