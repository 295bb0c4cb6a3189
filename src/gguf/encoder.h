// Serializing GGUF fields and metadata values (internal to the gguf layer).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/status.h"
#include "gguf/file.h"
#include "gguf/value.h"

namespace strata::gguf {

/// Appends little-endian GGUF encodings to a byte vector.
class Encoder {
 public:
  template <typename T>
  void put(T v) {
    static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>);
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &v, sizeof(T));
  }
  /// A u64 byte count, then the bytes.
  void put_string(std::string_view s);
  /// The value's payload, without its type id (a key-value pair writes the type first).
  void put_value(const Value& v);
  /// A tensor table entry: name, dimension count, shape, type id, offset.
  void put_tensor_info(const TensorInfo& t);

  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

/// InvalidArgument (naming `key`) unless `v` can be written as it is: its type matches what
/// it holds, every array item has the array's element type, arrays nest at most
/// kMaxArrayDepth deep.
Status check_value(std::string_view key, const Value& v);

}  // namespace strata::gguf
