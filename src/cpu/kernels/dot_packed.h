// A faster mul_mat path for weight types whose kernels read the activations in a layout of
// their own rather than as rows of DotKernels::act_type.
//
// mul_mat packs every activation row once (pack) and then calls tile with the packed rows.
// Whether the path is taken depends only on the weight type and k, never on the number of
// activation rows or threads, and the tile contract of dot.h holds unchanged: each output
// depends only on its two rows and k. Other users of dot_kernels (flash attention) keep the
// plain layout.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/types.h"
#include "cpu/kernels/dot.h"

namespace strata::cpu {

struct PackedDot {
  int max_w;  ///< largest nw the tile kernel accepts
  int max_a;  ///< largest na the tile kernel accepts
  /// Elements per packed group: pack and act_row_bytes take any multiple of it, and packing a
  /// row piece by piece (at multiples of it) gives the same bytes as packing it whole.
  int64_t group;
  /// Bytes of one packed activation row of k elements (a multiple of 64).
  size_t (*act_row_bytes)(int64_t k);
  /// A dense f32 row of k elements to its packed form; dst is 64-byte aligned.
  void (*pack)(const float* src, uint8_t* dst, int64_t k);
  /// As DotKernels::tile, with activation rows in pack's layout, 64-byte aligned.
  DotTileFn tile;
};

/// The packed path for `weight_type` rows of k elements, or nullptr when there is none (this
/// build lacks the instructions, or k does not fit the kernel's grouping).
const PackedDot* packed_dot(core::Type weight_type, int64_t k);

// The packed kernels of each family (dot_packed_*.cpp); packed_dot asks them in turn.
const PackedDot* packed_dot_q8(core::Type weight_type, int64_t k);
const PackedDot* packed_dot_q8_0(core::Type weight_type, int64_t k);
const PackedDot* packed_dot_k(core::Type weight_type, int64_t k);

}  // namespace strata::cpu
