// Tensors: up to 4 dimensions with byte strides; a view points into another tensor's bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/op.h"
#include "core/types.h"

namespace strata::core {

inline constexpr int kMaxDims = 4;
inline constexpr int kMaxSrc = 4;  ///< flash_attn reads q, k, v and a mask

/// Role flags; a tensor may have several.
enum TensorFlag : uint32_t {
  kFlagInput = 1u << 0,   ///< filled by the caller before each run
  kFlagOutput = 1u << 1,  ///< read after the run: its memory is never reused within the graph
  kFlagWeight = 1u << 2,  ///< model parameter: lives in a weight buffer, pins its consumers
  /// Read outside the run of nodes that computes it (by another split, or by the caller):
  /// set by the scheduler, so a backend that keeps results in its own form (a meta device's
  /// shards) knows which ones to make whole.
  kFlagShared = 1u << 3,
};

/// A node or leaf of a graph. Shapes are innermost-first: ne[0] is the row length, nb[i] the
/// byte stride of dimension i. Memory placement (`data`, `buffer`) is set by the memory layer.
struct Tensor {
  Type type = Type::kF32;
  std::array<int64_t, kMaxDims> ne{1, 1, 1, 1};
  std::array<size_t, kMaxDims> nb{0, 0, 0, 0};

  Op op = Op::kNone;
  OpParams params;
  std::array<Tensor*, kMaxSrc> src{};

  /// For views and in-place ops (set_rows): the tensor whose bytes this one uses.
  Tensor* view_src = nullptr;
  size_t view_offset = 0;

  uint32_t flags = 0;
  std::string name;

  void* data = nullptr;    ///< address of element 0, once placed
  void* buffer = nullptr;  ///< owning buffer, opaque to core

  int64_t nelements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  /// Number of rows: product of dims 1..3.
  int64_t nrows() const { return ne[1] * ne[2] * ne[3]; }
  /// Bytes spanned by the tensor given its strides.
  size_t nbytes() const;
  /// True when elements are laid out densely in row-major order with no gaps.
  bool is_contiguous() const;
  /// True when each row is dense (nb[0] is the element size), though rows may be strided.
  bool has_contiguous_rows() const;
  bool is_view() const { return view_src != nullptr; }
  bool has_flag(TensorFlag f) const { return (flags & f) != 0; }
  /// Address of element (i0 = 0, i1, i2, i3); valid once placed.
  uint8_t* row_ptr(int64_t i1, int64_t i2 = 0, int64_t i3 = 0) const {
    return static_cast<uint8_t*>(data) + i1 * nb[1] + i2 * nb[2] + i3 * nb[3];
  }
};

/// The tensor that owns the memory a (chain of) view(s) uses.
inline const Tensor* storage_of(const Tensor* t) {
  while (t->view_src != nullptr) t = t->view_src;
  return t;
}

/// Dense strides for a shape of the given type.
std::array<size_t, kMaxDims> contiguous_strides(Type type, const std::array<int64_t, kMaxDims>& ne);

/// "f32 [64, 5, 1, 1]" for messages.
std::string describe(const Tensor& t);

}  // namespace strata::core
