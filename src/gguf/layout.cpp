#include "gguf/layout.h"

#include <limits>

namespace strata::gguf {

std::string shape_string(const int64_t* ne, int n_dims) {
  std::string s = "[";
  for (int i = 0; i < n_dims; ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(ne[i]);
  }
  return s + "]";
}

Result<size_t> tensor_byte_size(std::string_view name, core::Type type, const int64_t* ne,
                                int n_dims, ErrorCode code) {
  const std::string what = "gguf: tensor '" + std::string(name) + "'";
  for (int i = 0; i < kMaxDims; ++i) {
    if (ne[i] < 0) {
      return error(code, what + " dimension " + std::to_string(i) + " is negative (" +
                             std::to_string(ne[i]) + ")");
    }
  }
  const int64_t block = core::block_size(type);
  if (ne[0] % block != 0) {
    return error(code, what + " row length " + std::to_string(ne[0]) +
                           " is not a multiple of the " + std::string(core::type_name(type)) +
                           " block size " + std::to_string(block));
  }
  for (int i = 0; i < kMaxDims; ++i) {
    if (ne[i] == 0) return size_t{0};
  }
  // The element count must fit int64 (tensors index with it) and the byte size size_t.
  int64_t elements = 1;
  for (int i = 0; i < kMaxDims; ++i) {
    if (__builtin_mul_overflow(elements, ne[i], &elements)) {
      return error(
          code, what + " element count overflows int64 (shape " + shape_string(ne, n_dims) + ")");
    }
  }
  const auto rows = static_cast<size_t>(elements / ne[0]);
  const auto blocks_per_row = static_cast<size_t>(ne[0] / block);
  size_t row_bytes = 0;
  size_t bytes = 0;
  if (__builtin_mul_overflow(blocks_per_row, core::type_size(type), &row_bytes) ||
      __builtin_mul_overflow(row_bytes, rows, &bytes) ||
      bytes > static_cast<size_t>(std::numeric_limits<int64_t>::max())) {
    return error(code, what + " byte size overflows (shape " + shape_string(ne, n_dims) + ")");
  }
  return bytes;
}

}  // namespace strata::gguf
