// Host memory known to mirror a file's bytes (a read-only mapping), so a device that keeps its
// own copy of the file (an MPI rank) can read the bytes there instead of receiving them.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace strata::memory {

/// Where a host address lies in a file.
struct FileSpot {
  std::string path;   ///< the path the mapping was opened with
  size_t offset = 0;  ///< byte offset of the address in the file
  size_t left = 0;    ///< bytes of the mapping from there to its end
};

/// Notes that [base, base + size) holds the bytes of `path` from offset 0. Until forgotten.
void remember_file_mapping(const void* base, size_t size, const std::string& path);
void forget_file_mapping(const void* base);
/// The file behind `p`, if `p` lies in a remembered mapping.
std::optional<FileSpot> find_file_spot(const void* p);

}  // namespace strata::memory
