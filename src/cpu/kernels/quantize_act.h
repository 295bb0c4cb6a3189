// Vectorised activation quantizers for mul_mat: the same bits as core's reference q8_0 and
// q8_k quantizers (core/quants/q8.cpp, q8_k.cpp), only faster.
#pragma once

#include <cstdint>

namespace strata::cpu {

/// core's q8_0_from_float: per 32 floats, d = amax / 127 and q = roundf(x / d) (half away
/// from zero, NaN to 0), bit for bit. n is a multiple of 32.
void quantize_q8_0(const float* src, void* dst, int64_t n);

/// core's q8_k_from_float: per 256 floats, the scale from the first element of largest
/// magnitude, q = nearest_int(-127 / max * x) (ties to even) and the sums per 16, bit for bit.
/// n is a multiple of 256.
void quantize_q8_k(const float* src, void* dst, int64_t n);

}  // namespace strata::cpu
