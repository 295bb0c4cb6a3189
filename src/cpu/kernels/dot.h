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

namespace strata::cpu {

/// out[iw * ldo_w + ia * ldo_a] = dot(w row iw, a row ia) for iw < nw, ia < na. Rows hold k
/// elements; weight rows are `ldw` bytes apart, activation rows `lda` bytes apart.
using DotTileFn = void (*)(int64_t k, const uint8_t* w, size_t ldw, int nw, const uint8_t* a,
                           size_t lda, int na, float* out, int64_t ldo_w, int64_t ldo_a);

/// How mul_mat computes with one weight type.
struct DotKernels {
  core::Type act_type;  ///< activations are rounded to this type before the dot products
  int max_w;            ///< largest nw the tile kernel accepts
  int max_a;            ///< largest na the tile kernel accepts
  DotTileFn tile;
  /// The same dot products summed in llama.cpp's vector-dot order (ggml_vec_dot_*), which its
  /// mul_mat_id always takes while its mul_mat takes a GEMM with another order when k allows;
  /// null where the two orders agree (the block types).
  DotTileFn vector_order_tile = nullptr;
};

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

}  // namespace strata::cpu
