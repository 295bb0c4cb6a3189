#include "core/tensor.h"

namespace strata::core {

size_t Tensor::nbytes() const {
  if (nelements() == 0) return 0;
  // Bytes from element 0 to one past the last element, whatever the strides' order. Plain
  // types may stride along dim 0 (a transposed view); blocks are always dense within a row.
  size_t bytes = block_size(type) == 1 ? type_size(type) + static_cast<size_t>(ne[0] - 1) * nb[0]
                                       : row_size(type, ne[0]);
  for (int i = 1; i < kMaxDims; ++i) bytes += static_cast<size_t>(ne[i] - 1) * nb[i];
  return bytes;
}

bool Tensor::has_contiguous_rows() const {
  return nb[0] == type_size(type);
}

bool Tensor::is_contiguous() const {
  const auto dense = contiguous_strides(type, ne);
  for (int i = 0; i < kMaxDims; ++i) {
    if (ne[i] != 1 && nb[i] != dense[i]) return false;
  }
  return true;
}

std::array<size_t, kMaxDims> contiguous_strides(Type type,
                                                const std::array<int64_t, kMaxDims>& ne) {
  std::array<size_t, kMaxDims> nb{};
  nb[0] = type_size(type);
  nb[1] = row_size(type, ne[0]);
  for (int i = 2; i < kMaxDims; ++i) nb[i] = nb[i - 1] * static_cast<size_t>(ne[i - 1]);
  return nb;
}

std::string describe(const Tensor& t) {
  // Plain strings, not a stream: a stream would swallow a failed allocation and return a
  // truncated text.
  return std::string(type_name(t.type)) + " [" + std::to_string(t.ne[0]) + ", " +
         std::to_string(t.ne[1]) + ", " + std::to_string(t.ne[2]) + ", " + std::to_string(t.ne[3]) +
         "]";
}

}  // namespace strata::core
