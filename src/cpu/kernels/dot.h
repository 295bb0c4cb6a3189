// Dot-product kernels for mul_mat, one set per weight type.
//
// A tile kernel computes every dot product between nw weight rows and na activation rows.
// Contract: each output depends only on its two rows and k, never on nw, na or where the pair
// sits in the tile; edge tiles run the same per-pair arithmetic as full ones. That is what
// makes mul_mat bit-identical for any thread count and any blocking.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/types.h"
#include "cpu/kernels/kernel_set.h"

namespace strata::cpu::STRATA_KERNEL_NS {

/// Kernels for a weight type, or nullptr when mul_mat cannot use that type as weights.
const DotKernels* dot_kernels(core::Type weight_type);

/// Rounds a dense f32 activation row to `act_type` (f16/bf16 to nearest even, q8_0 / q8_1 /
/// q8_k with core's reference quantizers), as documented for mul_mat in core/ops.h.
void convert_activations(core::Type act_type, const float* src, void* dst, int64_t n);

// One entry point per weight type; dot.cpp builds the table from them.
extern const DotKernels kDotF32;
extern const DotKernels kDotF16;
extern const DotKernels kDotBF16;
extern const DotKernels kDotQ8_0;
extern const DotKernels kDotQ4_0;
extern const DotKernels kDotQ5_0;
extern const DotKernels kDotQ4_1;
extern const DotKernels kDotQ5_1;
extern const DotKernels kDotQ2_K;
extern const DotKernels kDotQ3_K;
extern const DotKernels kDotQ4_K;
extern const DotKernels kDotQ5_K;
extern const DotKernels kDotQ6_K;

}  // namespace strata::cpu::STRATA_KERNEL_NS
