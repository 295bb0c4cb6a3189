// The oracle: a naive, single-threaded implementation of every op, written straight from the
// definitions in core/ops.h with explicit strides and double accumulation. It is never
// optimised; the conformance tests hold the real kernels to it.
#pragma once

#include "core/graph.h"
#include "core/status.h"
#include "core/tensor.h"

namespace strata::cpu::reference {

/// Computes one node whose sources are computed and placed. View ops and leafs are no-ops.
/// Errors: kUnsupported (types it cannot convert), kInternal (not placed), kOutOfRange (a row
/// id outside its table; nothing is written).
Status compute_node(const core::Tensor& node);

/// Computes every node of `g` in order; stops at the first error, which names the node.
Status compute_graph(const core::Graph& g);

}  // namespace strata::cpu::reference
