// Dot products against a float matrix stored transposed (a view whose rows are strided), as
// attention reads its V cache: element j of row d sits at w + j * col_stride + d * elem_size.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/types.h"

namespace strata::cpu::STRATA_KERNEL_NS {

/// Whether dot_transposed_rows handles weights of `type` with rows of k elements: F32 or F16,
/// k a multiple of 16 (the float kernels' GEMM order, which it reproduces).
bool dot_transposed_supported(core::Type type, int64_t k);

/// Activation rows one call takes at most: they share each walk down the columns.
inline constexpr int kTransposedMaxRows = 8;

/// Floats of scratch dot_transposed_rows needs for m rows of k elements.
size_t dot_transposed_scratch(int64_t k, int64_t m);

/// out[r * ldo_row + d * ldo] = dot(row d, activation r) for d < m and r < n_act (at most
/// kTransposedMaxRows; activation r at a + r * lda), bit for bit what the float tile kernels
/// give for the same rows gathered densely (16 lanes, element j into lane j % 16, then the lane
/// tree). Activations hold k elements of the weight type (f32 or f16).
void dot_transposed_rows(core::Type type, int64_t k, int64_t m, const uint8_t* w, size_t col_stride,
                         const uint8_t* a, size_t lda, int n_act, float* out, int64_t ldo,
                         int64_t ldo_row, float* scratch);

}  // namespace strata::cpu::STRATA_KERNEL_NS
