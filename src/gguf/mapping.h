// A read-only memory mapping of a whole file (internal to the gguf layer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace strata::gguf {

/// Owns a read-only, private mapping of a file; unmapped on destruction. Move-only.
/// An empty file has no mapping: data() is nullptr and size() is 0.
class Mapping {
 public:
  /// Maps `path`. NotFound when it does not exist; Io when it cannot be opened or mapped.
  static Result<Mapping> map_file(const std::string& path);

  Mapping() = default;
  Mapping(Mapping&& other) noexcept;
  Mapping& operator=(Mapping&& other) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  Mapping(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  void reset();

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace strata::gguf
