// Parsing and validating a GGUF image (internal to the gguf layer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "gguf/cursor.h"
#include "gguf/file.h"
#include "gguf/layout.h"
#include "gguf/value.h"

namespace strata::gguf {

/// Fewest bytes of a tensor table entry: name length, dimension count, one dimension, type and
/// offset.
inline constexpr size_t kMinTensorEntrySize = 8 + 4 + 8 + 4 + 8;

/// Everything a File holds besides the bytes, fully validated.
struct ParsedFile {
  uint32_t version = 0;
  size_t alignment = kDefaultAlignment;
  /// Start of the data section: the end of the tensor table rounded up to the alignment. A
  /// file without tensor data may end before it.
  size_t data_offset = 0;
  std::vector<KeyValue> metadata;
  std::vector<TensorInfo> tensors;
};

/// Parses and validates the GGUF image [data, data + size).
Result<ParsedFile> parse_gguf(const uint8_t* data, size_t size);

/// Reads `count` key-value pairs; rejects duplicate keys and malformed values.
Result<std::vector<KeyValue>> read_metadata(Cursor& cursor, uint64_t count);

/// Reads `count` tensor table entries (name, shape, type, offset); sizes are left at 0.
Result<std::vector<TensorInfo>> read_tensor_table(Cursor& cursor, uint64_t count);

/// Fills in each tensor's size and checks shapes, alignment, bounds and overlaps against a
/// data section at `data_offset` in a file of `file_size` bytes.
Status check_tensor_layout(std::vector<TensorInfo>& tensors, size_t alignment, size_t data_offset,
                           size_t file_size);

}  // namespace strata::gguf
