// Layout rules shared by the reader and the writer (internal to the gguf layer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "core/types.h"

namespace strata::gguf {

inline constexpr char kAlignmentKey[] = "general.alignment";
/// Tensor data starts at a multiple of this unless `general.alignment` says otherwise.
inline constexpr size_t kDefaultAlignment = 32;
/// Arrays nested deeper than this are rejected, so a hostile file cannot exhaust the stack.
inline constexpr int kMaxArrayDepth = 64;
/// GGUF tensors have 1 to 4 dimensions.
inline constexpr int kMaxDims = 4;

/// `n` rounded up to a multiple of `alignment` (a power of two); `n` must leave room for it.
inline size_t align_up(size_t n, size_t alignment) {
  return (n + alignment - 1) & ~(alignment - 1);
}

inline bool is_power_of_two(uint64_t n) {
  return n != 0 && (n & (n - 1)) == 0;
}

/// "[64, 512]": the first `n_dims` entries of a shape, for messages.
std::string shape_string(const int64_t* ne, int n_dims);

/// Bytes of a tensor of `type` and shape `ne` (all four entries, unused ones 1). Errors (code
/// `code`, naming tensor `name`) when a dimension is negative, the row length is not a
/// multiple of the type's block size, or the element count or byte size overflows.
Result<size_t> tensor_byte_size(std::string_view name, core::Type type, const int64_t* ne,
                                int n_dims, ErrorCode code);

}  // namespace strata::gguf
