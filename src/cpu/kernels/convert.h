// Row conversions between f32 and the computable types, with vector fast paths.
//
// Every conversion rounds exactly as core's reference (traits().to_float / from_float) does:
// round-to-nearest-even for f16 and bf16, core's own quantizers for block types. The fast
// paths only change the speed, never the bits (NaN payloads aside).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/float16.h"
#include "core/types.h"

namespace strata::cpu::STRATA_KERNEL_NS {

void f16_to_f32(const core::Half* src, float* dst, int64_t n);
void f32_to_f16(const float* src, core::Half* dst, int64_t n);
void bf16_to_f32(const core::BFloat16* src, float* dst, int64_t n);
void f32_to_bf16(const float* src, core::BFloat16* dst, int64_t n);

/// A dense row of n elements of any computable type to f32.
void row_to_f32(core::Type type, const void* src, float* dst, int64_t n);
/// n floats to a dense row of any computable type (n a multiple of its block size).
void row_from_f32(core::Type type, const float* src, void* dst, int64_t n);

/// n elements of a non-quantized type, `stride` bytes apart, to dense f32.
void gather_to_f32(core::Type type, const uint8_t* src, size_t stride, float* dst, int64_t n);
/// n dense floats to elements of a non-quantized type `stride` bytes apart.
void scatter_from_f32(core::Type type, const float* src, uint8_t* dst, size_t stride, int64_t n);

}  // namespace strata::cpu::STRATA_KERNEL_NS
