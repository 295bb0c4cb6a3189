// Where a paged KV cache lives when it is not resident: host memory, or a file.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "core/status.h"

namespace strata::engine {

/// A byte store as large as the whole KV cache, zero where never written. Reads and writes
/// come from one thread at a time (the pager's).
class KvHome {
 public:
  virtual ~KvHome() = default;
  virtual Status read(size_t offset, void* dst, size_t bytes) = 0;
  virtual Status write(size_t offset, const void* src, size_t bytes) = 0;
  /// "host memory (96 MiB)" or "file /tmp/kv (96 MiB)", for messages.
  virtual std::string describe() const = 0;

  /// `bytes` of zeroed host memory; kOutOfMemory when the OS refuses.
  static Result<std::unique_ptr<KvHome>> in_memory(size_t bytes);
  /// A new file at `path` (replaced if it exists, removed when the home is destroyed) with
  /// `bytes` reserved up front, so a full disk is found out here and not mid-run (kIo naming
  /// the path and the reason).
  static Result<std::unique_ptr<KvHome>> in_file(const std::string& path, size_t bytes);
};

}  // namespace strata::engine
