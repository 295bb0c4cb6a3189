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

/// Floats of scratch dot_transposed_rows needs for m rows of k elements.
size_t dot_transposed_scratch(int64_t k, int64_t m);

/// out[d * ldo] = dot(row d, a) for d < m, bit for bit what the float tile kernels give for the
/// same rows gathered densely (16 lanes, element j into lane j % 16, then the lane tree). `a`
/// holds k elements of the weight type (f32 or f16). Blocks of 16 outputs keep their lanes in
/// registers while the walk goes down the columns.
void dot_transposed_rows(core::Type type, int64_t k, int64_t m, const uint8_t* w, size_t col_stride,
                         const uint8_t* a, float* out, int64_t ldo, float* scratch);

}  // namespace strata::cpu::STRATA_KERNEL_NS
