// Bounded little-endian reads over a byte range (internal to the gguf layer).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "core/status.h"

namespace strata::gguf {

// GGUF is little-endian and tensor data is used in place from the mapping, so a big-endian
// host could read neither; fail the build rather than misread files.
static_assert(std::endian::native == std::endian::little,
              "strata's GGUF reader needs a little-endian host");

/// Reads fields from [data, data + size) in order. A read that would run past the end
/// returns a Malformed error naming `what` and leaves the position unchanged.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  size_t offset() const { return offset_; }
  size_t size() const { return size_; }
  size_t remaining() const { return size_ - offset_; }

  /// Reads one little-endian integer or float.
  template <typename T>
  Result<T> read(std::string_view what) {
    static_assert(std::is_arithmetic_v<T>);
    if (remaining() < sizeof(T)) return end_of_file(what, sizeof(T));
    T v;
    std::memcpy(&v, data_ + offset_, sizeof(T));
    offset_ += sizeof(T);
    return v;
  }

  /// Reads a GGUF string: a u64 byte count, then the bytes (not NUL-terminated).
  Result<std::string> read_string(std::string_view what);

 private:
  Status end_of_file(std::string_view what, size_t needed) const;

  const uint8_t* data_;
  size_t size_;
  size_t offset_ = 0;
};

}  // namespace strata::gguf
