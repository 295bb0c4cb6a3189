// One entry point for computing any node on the CPU: checks, scratch size, dispatch.
//
// Each call goes to the kernel set picked for this CPU (cpu/kernel_sets.h).
#pragma once

#include <cstddef>

#include "core/status.h"
#include "core/tensor.h"
#include "cpu/kernels/kernel_args.h"

namespace strata::cpu {

/// Whether the CPU kernels support this node's types, layouts and parameters (kUnsupported
/// naming what is not). Data placement is not checked. View ops and leafs always pass.
Status check_node(const core::Tensor& node);

/// Scratch bytes the node's kernel needs when run by n_threads participants (0 for most ops).
size_t work_size(const core::Tensor& node, int n_threads);

/// Computes this participant's share of `node`; every participant must call it with the same
/// node and scratch. View ops and leafs are no-ops. Errors (an unsupported node, an id out of
/// range) are returned by every participant alike, before anything is written.
Status compute_node(const core::Tensor& node, const KernelArgs& args);

/// Whether mul_mat node `next` reads its activations (src1) in the form `first` leaves in the
/// shared scratch: the same tensor, converted the same way. Run right after `first` with
/// KernelArgs::input_ready, it then skips the conversion and the barrier after it.
bool shares_converted_input(const core::Tensor& first, const core::Tensor& next);

}  // namespace strata::cpu
