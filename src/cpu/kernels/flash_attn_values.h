// The product of a block of cells' probabilities with their V rows, for flash_attn.cpp: the
// accumulators of up to kMaxRows query rows take kBlock cells at a time.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/types.h"

namespace strata::cpu::STRATA_KERNEL_NS::flash {

/// Query rows per KV head of a work item.
inline constexpr int kMaxRows = 8;
/// Cells per online-softmax step. The engine's KV cache hands out cells in pages of 32 (one
/// sequence's consecutive positions each); steps of the same size, anchored at cell 0, keep a
/// sequence's steps the same whatever other sequences' pages lie between its own.
inline constexpr int64_t kBlock = 32;

/// Whether accumulate_rows reads V rows of `v_type` where they lie (f16, converted in
/// registers), rather than rows v_row converted.
bool reads_f16_rows(core::Type v_type, int64_t hd);

/// The V rows of a later block, which accumulate_rows asks memory for while it reads the
/// current block's: n rows of `bytes` each, `stride` apart from `first` (none when n is 0).
struct RowsAhead {
  const uint8_t* first = nullptr;
  size_t stride = 0;
  size_t bytes = 0;
  int64_t n = 0;
};

/// acc[r][e] += p[r][i] * v[i][e] over the n cells in order for `rows` rows (accumulators hd
/// apart, probabilities kBlock apart), skipping cells whose p is 0: v holds the cells' V rows
/// as f32, or as f16 where reads_f16_rows says so (`f16`). Meanwhile it asks for `ahead`'s lines.
void accumulate_rows(float* acc, const float* p, int rows, const void* const* v, bool f16,
                     int64_t n, int64_t hd, const RowsAhead& ahead);

/// A V row of n elements as f32: F32 rows in place, the others converted into `buf`.
const float* v_row(core::Type t, const uint8_t* row, float* buf, int64_t n);

}  // namespace strata::cpu::STRATA_KERNEL_NS::flash
