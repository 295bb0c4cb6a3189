// Load-time layouts of weight rows that the CPU kernels read faster than GGUF's one row after
// another. Decode reads every weight once per token; sixteen rows read side by side, one row
// per 32-bit lane, cost a transpose of every block and a gather of its scales, more than the
// dot products themselves. Regrouped once at load, a block of sixteen rows is a few aligned
// loads.
//
// A group holds its sixteen rows' blocks in block order, and groups follow each other in row
// order, so a group starts where its first row starts in the plain type and takes the same
// bytes as its rows. Each field of the plain block keeps its bytes; only their order changes:
// the field's step s of row r lies at [s][r], a step being the width the kernels read per lane.
#pragma once

#include <cstdint>

#include "core/blocks.h"
#include "core/types.h"

namespace strata::core {

/// Block b of a group of sixteen q4_0 rows (core::Type::kQ4_0x16).
struct BlockQ4_0x16 {
  static constexpr int kRows = 16;
  Half d[kRows];  ///< row r's scale
  /// Row r's quant bytes 4s..4s+3 at qs[s][r]: low nibbles are elements 4s..4s+3, high
  /// nibbles elements 16 + 4s..16 + 4s + 3.
  uint8_t qs[4][kRows][4];
};
static_assert(sizeof(BlockQ4_0x16) == BlockQ4_0x16::kRows * sizeof(BlockQ4_0));

/// Super-block b of a group of sixteen q4_k rows (core::Type::kQ4_Kx16).
struct BlockQ4_Kx16 {
  static constexpr int kRows = 16;
  Half d[kRows];
  Half dmin[kRows];
  /// Row r's packed 6-bit scale and min bytes 4s..4s+3 at scales[s][r].
  uint8_t scales[3][kRows][4];
  /// Row r's quant bytes 4s..4s+3 at qs[s][r] (BlockQ4_K::qs's order within the row).
  uint8_t qs[32][kRows][4];
};
static_assert(sizeof(BlockQ4_Kx16) == BlockQ4_Kx16::kRows * sizeof(BlockQ4_K));

/// Block b of a group of sixteen q8_0 rows (core::Type::kQ8_0x16).
struct BlockQ8_0x16 {
  static constexpr int kRows = 16;
  Half d[kRows];  ///< row r's scale
  /// Row r's quants 4s..4s+3 at qs[s][r].
  int8_t qs[8][kRows][4];
};
static_assert(sizeof(BlockQ8_0x16) == BlockQ8_0x16::kRows * sizeof(BlockQ8_0));

/// The GGUF type whose rows `grouped` regroups (q4_0 for q4_0x16), or `grouped` itself when
/// it is not a grouped type.
Type plain_rows_type(Type grouped);

/// Rearranges `rows` rows of k elements of plain_rows_type(grouped) into groups (rows a
/// multiple of 16, k of the block size).
void interleave_rows(Type grouped, const void* src, void* dst, int64_t rows, int64_t k);
/// The inverse: plain rows back from their groups.
void deinterleave_rows(Type grouped, const void* src, void* dst, int64_t rows, int64_t k);

}  // namespace strata::core
