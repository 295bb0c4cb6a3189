// What makes two ranks' copies of a model file the same file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace strata::mpi {

struct FileIdentity {
  uint64_t size = 0;    ///< the file's size
  uint64_t hashed = 0;  ///< bytes hashed from its start (header and tensor table)
  uint64_t hash = 0;    ///< FNV-1a of those bytes
};

/// Reads `path`'s size and hashes its first `head_bytes` bytes (fewer when it is shorter).
Result<FileIdentity> identify_file(const std::string& path, uint64_t head_bytes);

}  // namespace strata::mpi
