// llama.cpp's K-quant dot products, emulated step by step in plain scalar code: what
// ggml_vec_dot_q4_K_q8_K, _q5_K_q8_K and _q6_K_q8_K (ggml-cpu, x86 AVX2 code, June 2025)
// compute, with every f32 rounding in the same place. Written from the description of those
// kernels (vector lanes become arrays), independently of strata's kernels, to test them.
#pragma once

#include <cstdint>

#include "core/blocks.h"

namespace strata::cpu::test {

/// One output: n / 256 super-blocks of weights x and activations y.
float ggml_dot_q4_k(const core::BlockQ4_K* x, const core::BlockQ8_K* y, int64_t n);
float ggml_dot_q5_k(const core::BlockQ5_K* x, const core::BlockQ8_K* y, int64_t n);
float ggml_dot_q6_k(const core::BlockQ6_K* x, const core::BlockQ8_K* y, int64_t n);

/// strata's q4_k kernel with one weight row per lane (dot_packed_q4_k.cpp): per super-block the
/// exact integer sums of scales times sub-block dot products and of mins times sub-block
/// activation sums, then acc = fma(sum, d_w * d_a, acc) and acc = fma(-mins, dmin_w * d_a, acc).
float lanes_dot_q4_k(const core::BlockQ4_K* x, const core::BlockQ8_K* y, int64_t n);

/// ggml's hsum_float_8 as its instructions do it: high 128 bits plus low, then movehl, then
/// movehdup (exposed for the hand-checked order test).
float ggml_hsum_float_8(const float (&v)[8]);

}  // namespace strata::cpu::test
