// Where the writer's bytes go: a file or a byte vector (internal to the gguf layer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace strata::gguf {

/// An output the writer appends to, in order.
class Sink {
 public:
  virtual ~Sink() = default;
  /// Appends `size` bytes. Io when the OS refuses.
  virtual Status write(const void* data, size_t size) = 0;
  /// Flushes and closes; the output is complete only when this succeeds.
  virtual Status close() = 0;
};

/// Creates (or truncates) `path`. The file is removed if the sink is destroyed before a
/// successful close(), so an abandoned write leaves no truncated file behind.
Result<std::unique_ptr<Sink>> open_file_sink(const std::string& path);

/// Appends to `*out`, which must outlive the sink.
std::unique_ptr<Sink> make_memory_sink(std::vector<uint8_t>* out);

}  // namespace strata::gguf
