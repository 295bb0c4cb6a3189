// Which part of a split tensor each device of a meta device holds.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "memory/buffer.h"

namespace strata::meta {

/// Elements [lo, hi) along one axis.
struct Range {
  int64_t lo = 0, hi = 0;
  int64_t size() const { return hi - lo; }
  friend bool operator==(const Range&, const Range&) = default;
};

/// One device's ranges along a split axis, ascending; its shard holds them back to back (a
/// fused tensor gives one range per segment).
using Pieces = std::vector<Range>;

/// Elements a device's pieces hold.
int64_t total(const Pieces& p);

/// Cuts `units` whole units into one run per device in proportion to `weights`: device d gets
/// units [bounds[d], bounds[d + 1]), its share rounded to whole units (at least one when the
/// share is half a unit or more). A device whose share is under half a unit is
/// kInvalidArgument, as are weights that are not positive and finite.
Result<std::vector<int64_t>> unit_bounds(int64_t units, std::span<const float> weights);

/// How many whole units `split` cuts an axis of `length` elements into (see
/// memory::TensorSplit); kInvalidArgument when a segment is not a whole number of granules.
Result<int64_t> split_units(int64_t length, const memory::TensorSplit& split);

/// Per device, the pieces of an axis of `length` elements divided as `split` says (its
/// segments and granule; see memory::TensorSplit).
Result<std::vector<Pieces>> shard_pieces(int64_t length, const memory::TensorSplit& split,
                                         std::span<const float> weights);

}  // namespace strata::meta
