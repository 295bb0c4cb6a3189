// The form a weight takes when the host copies it into memory of its own at load: the layout
// the kernel set that runs reads fastest, where it has one (core/quants/interleave.h).
#pragma once

#include <array>
#include <cstdint>

#include "core/status.h"
#include "core/types.h"

namespace strata::cpu {

/// The type a host copy of a weight of `type` and shape `ne` should hold: the grouped form
/// (core/quants/interleave.h) of a matrix of whole groups of 16 rows where the running kernel
/// set computes it, else `type`.
core::Type host_weight_type(core::Type type, const std::array<int64_t, 4>& ne);

/// Writes `rows` rows of k elements of `from` (as in the file) into the layout of `to`
/// (host_weight_type's answer); kUnsupported for any other pair of types.
Status convert_weight_rows(core::Type from, core::Type to, const void* src, void* dst, int64_t rows,
                           int64_t k);

}  // namespace strata::cpu
