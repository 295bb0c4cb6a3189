// Element and row access for the reference ops: any computable type, any strides.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace strata::cpu::reference {

/// Element (i0, i1, i2, i3) of a tensor of a plain (non-block) type, as float.
float get(const core::Tensor& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3);
/// Stores v at (i0, i1, i2, i3), rounded to the tensor's plain type by core's from_float.
void set(const core::Tensor& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3, float v);

/// Row (i1, i2, i3) as floats; block types are dequantized by core's to_float.
std::vector<float> get_row(const core::Tensor& t, int64_t i1, int64_t i2, int64_t i3);
/// Stores a whole row, rounded by core's from_float (a block type quantizes the whole row).
void set_row(const core::Tensor& t, int64_t i1, int64_t i2, int64_t i3,
             const std::vector<float>& v);

/// The I32 element (i0, i1, i2) of an ids or positions tensor.
int32_t get_i32(const core::Tensor& t, int64_t i0, int64_t i1 = 0, int64_t i2 = 0);

}  // namespace strata::cpu::reference
