// Reference conversions between float rows and each quantized GGUF type. Dequantization is
// bit-exact with ggml's dequantize_row_*; quantization follows ggml's quantize_row_*_ref (no
// importance matrix), so it is deterministic. `n` is a multiple of the type's block size.
// types.cpp wires these into the type table; kernels add fast paths of their own.
#pragma once

#include <cstdint>

namespace strata::core {

// Each `<type>_to_float` expands n elements of blocks into floats; each `<type>_from_float`
// quantizes n floats into blocks.

void q4_0_to_float(const void* src, float* dst, int64_t n);
void q4_0_from_float(const float* src, void* dst, int64_t n);
void q4_1_to_float(const void* src, float* dst, int64_t n);
void q4_1_from_float(const float* src, void* dst, int64_t n);

void q5_0_to_float(const void* src, float* dst, int64_t n);
void q5_0_from_float(const float* src, void* dst, int64_t n);
void q5_1_to_float(const void* src, float* dst, int64_t n);
void q5_1_from_float(const float* src, void* dst, int64_t n);

void q8_0_to_float(const void* src, float* dst, int64_t n);
void q8_0_from_float(const float* src, void* dst, int64_t n);
void q8_1_to_float(const void* src, float* dst, int64_t n);
void q8_1_from_float(const float* src, void* dst, int64_t n);

void q2_k_to_float(const void* src, float* dst, int64_t n);
void q2_k_from_float(const float* src, void* dst, int64_t n);
void q3_k_to_float(const void* src, float* dst, int64_t n);
void q3_k_from_float(const float* src, void* dst, int64_t n);
void q4_k_to_float(const void* src, float* dst, int64_t n);
void q4_k_from_float(const float* src, void* dst, int64_t n);
void q5_k_to_float(const void* src, float* dst, int64_t n);
void q5_k_from_float(const float* src, void* dst, int64_t n);
void q6_k_to_float(const void* src, float* dst, int64_t n);
void q6_k_from_float(const float* src, void* dst, int64_t n);
void q8_k_to_float(const void* src, float* dst, int64_t n);
void q8_k_from_float(const float* src, void* dst, int64_t n);

}  // namespace strata::core
