// The reference op implementations, called by reference.cpp's dispatcher once a node's
// types have been checked.
#pragma once

#include "core/status.h"
#include "core/tensor.h"

namespace strata::cpu::reference {

// math_ops.cpp: f32 arithmetic in double.
void add(const core::Tensor& dst);
void mul(const core::Tensor& dst);
void div(const core::Tensor& dst);
void sum_rows(const core::Tensor& dst);
void scale(const core::Tensor& dst);
void silu(const core::Tensor& dst);
void gelu(const core::Tensor& dst);
void tanh(const core::Tensor& dst);
void swiglu(const core::Tensor& dst);
void rms_norm(const core::Tensor& dst);
void rope(const core::Tensor& dst);
void soft_max(const core::Tensor& dst);

// data_ops.cpp: products and data movement.
void mul_mat(const core::Tensor& dst);
void cpy(const core::Tensor& dst);
void argmax(const core::Tensor& dst);
void top_k(const core::Tensor& dst);
Status mul_mat_id(const core::Tensor& dst);
Status get_rows(const core::Tensor& dst);
Status set_rows(const core::Tensor& dst);

// attention_ops.cpp: fused attention.
void flash_attn(const core::Tensor& dst);

}  // namespace strata::cpu::reference
