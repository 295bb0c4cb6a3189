#include "gguf/cursor.h"

namespace strata::gguf {

Result<std::string> Cursor::read_string(std::string_view what) {
  const size_t start = offset_;
  auto length = read<uint64_t>(what);
  if (!length.ok()) return length.status();
  // Checked against the bytes left before anything is allocated: a hostile length of 2^60
  // must be an error, not an allocation attempt.
  if (*length > remaining()) {
    offset_ = start;
    return error(ErrorCode::kMalformed, "gguf: " + std::string(what) + ": string length " +
                                            std::to_string(*length) +
                                            " runs past the end of the file (" +
                                            std::to_string(remaining()) + " bytes left)");
  }
  std::string s(reinterpret_cast<const char*>(data_ + offset_), static_cast<size_t>(*length));
  offset_ += static_cast<size_t>(*length);
  return s;
}

Status Cursor::end_of_file(std::string_view what, size_t needed) const {
  return error(ErrorCode::kMalformed, "gguf: unexpected end of file reading " + std::string(what) +
                                          " at offset " + std::to_string(offset_) + " (" +
                                          std::to_string(needed) + " bytes needed, " +
                                          std::to_string(remaining()) + " left)");
}

}  // namespace strata::gguf
