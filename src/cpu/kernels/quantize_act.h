// Activation quantizers for mul_mat: q8_k gives the bits of core's reference quantizer
// (core/quants/q8_k.cpp); q8_0 those of llama.cpp's activation quantizer (see below).
#pragma once

#include <cstdint>

#include "core/blocks.h"

namespace strata::cpu::STRATA_KERNEL_NS {

/// Per 32 floats: d = f16(amax / 127), q = x * (127 / amax) rounded half to even (NaN to 0).
/// This is llama.cpp's x86 activation quantizer; core's q8_0_from_float (used for weights, as
/// llama.cpp's quantizer does) divides by d and rounds half away from zero, which differs in
/// a few levels. n is a multiple of 32.
void quantize_q8_0(const float* src, void* dst, int64_t n);

/// One block of quantize_q8_0 in plain scalar code (the portable build's path, and the
/// vector path's test reference).
void q8_0_block_portable(const float* x, core::BlockQ8_0& b);

/// core's q8_k_from_float: per 256 floats, the scale from the first element of largest
/// magnitude, q = nearest_int(-127 / max * x) (ties to even) and the sums per 16, bit for bit.
/// n is a multiple of 256.
void quantize_q8_k(const float* src, void* dst, int64_t n);

}  // namespace strata::cpu::STRATA_KERNEL_NS
