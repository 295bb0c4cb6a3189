// The CPU kernels, one per compute op. Semantics are those documented in core/ops.h.
//
// Every kernel is called by all nth participants with the same node; each computes its own
// share (split by rows or output blocks) and never writes another's. A node's sources must
// have been computed, and the node checked by check_node (types and layouts the kernels
// support). Elementwise kernels tolerate dst aliasing src0 exactly (in-place reuse).
#pragma once

#include <cstddef>

#include "core/status.h"
#include "core/tensor.h"
#include "cpu/kernels/kernel_args.h"

namespace strata::cpu::STRATA_KERNEL_NS {

// This set's entry points for dispatch.h (dispatch.cpp), documented there.
Status check_node(const core::Tensor& node);
size_t work_size(const core::Tensor& node, int n_threads);
Status compute_node(const core::Tensor& node, const KernelArgs& args);

void mul_mat(const core::Tensor& dst, const KernelArgs& args);
void add(const core::Tensor& dst, const KernelArgs& args);
void mul(const core::Tensor& dst, const KernelArgs& args);
void div(const core::Tensor& dst, const KernelArgs& args);
void sum_rows(const core::Tensor& dst, const KernelArgs& args);
void top_k(const core::Tensor& dst, const KernelArgs& args);
/// Fails (kOutOfRange, nothing written) when an expert id is outside [0, n_expert).
Status mul_mat_id(const core::Tensor& dst, const KernelArgs& args);
void scale(const core::Tensor& dst, const KernelArgs& args);
void silu(const core::Tensor& dst, const KernelArgs& args);
void gelu(const core::Tensor& dst, const KernelArgs& args);
void tanh(const core::Tensor& dst, const KernelArgs& args);
void swiglu(const core::Tensor& dst, const KernelArgs& args);
void rms_norm(const core::Tensor& dst, const KernelArgs& args);
void rope(const core::Tensor& dst, const KernelArgs& args);
void soft_max(const core::Tensor& dst, const KernelArgs& args);
void cpy(const core::Tensor& dst, const KernelArgs& args);
void argmax(const core::Tensor& dst, const KernelArgs& args);
void flash_attn(const core::Tensor& dst, const KernelArgs& args);
/// Fails (kOutOfRange, nothing written) when an id is outside the table.
Status get_rows(const core::Tensor& dst, const KernelArgs& args);
/// Fails (kOutOfRange, nothing written) when an id is outside the destination.
Status set_rows(const core::Tensor& dst, const KernelArgs& args);

// Scratch each kernel needs for nth participants; ops not listed need none.
size_t mul_mat_work_size(const core::Tensor& dst, int nth);
size_t rope_work_size(const core::Tensor& dst, int nth);
size_t cpy_work_size(const core::Tensor& dst, int nth);
size_t set_rows_work_size(const core::Tensor& dst, int nth);
size_t flash_attn_work_size(const core::Tensor& dst, int nth);
size_t top_k_work_size(const core::Tensor& dst, int nth);
size_t mul_mat_id_work_size(const core::Tensor& dst, int nth);

/// dispatch.h's shares_converted_input for this set's mul_mat.
bool mul_mat_shares_input(const core::Tensor& first, const core::Tensor& next);

}  // namespace strata::cpu::STRATA_KERNEL_NS
