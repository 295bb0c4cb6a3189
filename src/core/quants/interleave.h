// Load-time layouts of weight rows that the CPU kernels read faster than GGUF's one row after
// another. Decode reads every weight once per token; sixteen q4_0 rows read side by side,
// one row per 32-bit lane, cost a transpose of every block and a gather of its scales, more
// than the dot products themselves. Regrouped once at load, a block of sixteen rows is five
// aligned loads.
#pragma once

#include <cstdint>

#include "core/blocks.h"

namespace strata::core {

/// Block b of a group of sixteen q4_0 rows (core::Type::kQ4_0x16). Groups follow each other
/// in row order and a group holds its rows' blocks in block order, so a group starts where
/// its first row starts in plain q4_0 and takes the same bytes as its sixteen rows.
struct BlockQ4_0x16 {
  static constexpr int kRows = 16;
  Half d[kRows];  ///< row r's scale
  /// Row r's quant bytes 4s..4s+3 at qs[s][r]: low nibbles are elements 4s..4s+3, high
  /// nibbles elements 16 + 4s..16 + 4s + 3.
  uint8_t qs[4][kRows][4];
};
static_assert(sizeof(BlockQ4_0x16) == BlockQ4_0x16::kRows * sizeof(BlockQ4_0));

/// Rearranges `rows` plain q4_0 rows of k elements (rows a multiple of 16, k of 32).
void interleave_q4_0x16(const void* src, void* dst, int64_t rows, int64_t k);
/// The inverse: plain q4_0 rows back from their groups.
void deinterleave_q4_0x16(const void* src, void* dst, int64_t rows, int64_t k);

}  // namespace strata::core
