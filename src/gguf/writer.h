// Writing GGUF v3 files as a stream: metadata and the tensor table first, then tensor data in
// table order, so a file far larger than memory can be written chunk by chunk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/types.h"
#include "gguf/file.h"
#include "gguf/value.h"

namespace strata::gguf {

/// Builds one GGUF v3 file. Usage: add_metadata / add_tensor, then begin (or
/// begin_in_memory), then every tensor's bytes in the order the tensors were added, then
/// finish. Calls out of that order, and wrong byte counts, are errors; nothing is written
/// for a call that fails. Move-only. A writer destroyed after begin() but before a successful
/// finish() removes its partial file.
class Writer {
 public:
  Writer();
  Writer(Writer&&) noexcept;
  Writer& operator=(Writer&&) noexcept;
  ~Writer();

  /// Adds a metadata entry (written in the order added). InvalidArgument when the key is
  /// empty or already added, or the value is inconsistent (its type disagrees with what it
  /// holds, an array item with the array's element type, arrays nest too deep).
  /// `general.alignment` must be a u32 power of two; tensor data is aligned to it.
  Status add_metadata(std::string key, Value value);

  /// Adds a tensor to the table. `ne` holds 1 to 4 dimensions, innermost first; the row
  /// length ne[0] must be a multiple of the type's block size. InvalidArgument otherwise, or
  /// when the name is empty or already added.
  Status add_tensor(std::string name, core::Type type, const std::vector<int64_t>& ne);

  /// Creates (or truncates) `path` and writes the header, metadata, tensor table and the
  /// padding up to the data section.
  Status begin(const std::string& path);
  /// Same as begin, but the file is built in memory; take it with take_bytes() after
  /// finish(). For tests and small files.
  Status begin_in_memory();

  /// Appends bytes of the current tensor, which may come in several chunks. A chunk may not
  /// run past the end of the current tensor; the padding before the next tensor is written
  /// when a tensor is complete.
  Status write_tensor_data(const void* data, size_t size);

  /// Checks that every tensor got all its bytes, then flushes and closes the file.
  Status finish();

  /// The finished file built by begin_in_memory(); the writer keeps no copy.
  Result<std::vector<uint8_t>> take_bytes();

  /// The tensor table as added; offsets (relative to the data section) and sizes are final
  /// once begin() has succeeded.
  const std::vector<TensorInfo>& tensors() const;
  /// The alignment of tensor data: `general.alignment` if added, else 32.
  size_t alignment() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::gguf
