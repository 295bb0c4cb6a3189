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

namespace strata::cpu::STRATA_KERNEL_NS {

/// The packed path for `weight_type` rows of k elements, or nullptr when there is none (this
/// build lacks the instructions, or k does not fit the kernel's grouping).
const PackedDot* packed_dot(core::Type weight_type, int64_t k);

// The packed kernels of each family (dot_packed_*.cpp); packed_dot asks them in turn.
const PackedDot* packed_dot_q4_0(core::Type weight_type, int64_t k);
const PackedDot* packed_dot_q8_0(core::Type weight_type, int64_t k);
const PackedDot* packed_dot_k(core::Type weight_type, int64_t k);
const PackedDot* packed_dot_f16(core::Type weight_type, int64_t k);  // in dot_float.cpp

/// packed_dot_f16's activations with a tile for many short weight rows (k <= 256) against up
/// to 8 activation rows, 16 weight rows at a time, with the same bits: decode's attention
/// scores under grouped-query attention. Null where packed_dot_f16 is or k does not fit.
const PackedDot* packed_dot_f16_cells(core::Type weight_type, int64_t k);

/// packed_dot_f16_cells with each output summed in element order, one multiply-add after
/// another, instead of in 16 lanes (so not mul_mat's bits): flash attention's scores.
const PackedDot* packed_dot_f16_chained(core::Type weight_type, int64_t k);

}  // namespace strata::cpu::STRATA_KERNEL_NS
