#include "meta/shard_ranges.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace strata::meta {

int64_t total(const Pieces& p) {
  int64_t n = 0;
  for (const Range& r : p) n += r.size();
  return n;
}

Result<std::vector<int64_t>> unit_bounds(int64_t units, std::span<const float> weights) {
  if (weights.empty()) return error(ErrorCode::kInvalidArgument, "no devices to split across");
  double sum = 0;
  for (float w : weights) {
    if (!(w > 0.0f) || !std::isfinite(w)) {
      return error(ErrorCode::kInvalidArgument, "split proportions must be positive and finite");
    }
    sum += w;
  }
  // Each device gets its share rounded to whole units, and at least one when its share is at
  // least half a unit; the rounding error goes to the devices it shortchanged most.
  const size_t n = weights.size();
  std::vector<double> share(n);
  std::vector<int64_t> count(n);
  int64_t given = 0;
  for (size_t d = 0; d < n; ++d) {
    share[d] = weights[d] / sum * static_cast<double>(units);
    if (share[d] < 0.5) {
      return error(ErrorCode::kInvalidArgument,
                   std::to_string(units) + " units are too few for these proportions: device " +
                       std::to_string(d) + " gets none");
    }
    count[d] = std::max<int64_t>(1, std::llround(share[d]));
    given += count[d];
  }
  while (given != units) {
    size_t pick = n;
    for (size_t d = 0; d < n; ++d) {
      if (given > units && count[d] <= 1) continue;
      const double gap = given < units ? share[d] - count[d] : count[d] - share[d];
      if (pick == n ||
          gap > (given < units ? share[pick] - count[pick] : count[pick] - share[pick]))
        pick = d;
    }
    if (pick == n) {
      return error(ErrorCode::kInvalidArgument, std::to_string(units) + " units are too few for " +
                                                    std::to_string(n) + " devices");
    }
    const int64_t step = given < units ? 1 : -1;
    count[pick] += step;
    given += step;
  }
  std::vector<int64_t> bounds{0};
  for (size_t d = 0; d < n; ++d) bounds.push_back(bounds.back() + count[d]);
  return bounds;
}

namespace {

std::vector<int64_t> segments_of(int64_t length, const memory::TensorSplit& split) {
  std::vector<int64_t> segments = split.segments;
  if (segments.empty()) segments.push_back(length);
  return segments;
}

}  // namespace

Result<int64_t> split_units(int64_t length, const memory::TensorSplit& split) {
  const std::vector<int64_t> segments = segments_of(length, split);
  if (std::accumulate(segments.begin(), segments.end(), int64_t{0}) != length) {
    return error(ErrorCode::kInternal, "split segments do not add up to the axis length");
  }
  const int64_t g = split.granule > 0 ? split.granule : 1;
  // Every segment is cut into the same number of units, so device d's share of each segment
  // is the same share of units (Q's head groups line up with K's and V's heads).
  int64_t units = 0;
  for (int64_t s : segments) {
    if (s % g != 0) {
      return error(ErrorCode::kInvalidArgument, "a part of " + std::to_string(s) +
                                                    " elements is not a whole number of units of " +
                                                    std::to_string(g));
    }
    units = std::gcd(units, s / g);
  }
  return units;
}

Result<std::vector<Pieces>> shard_pieces(int64_t length, const memory::TensorSplit& split,
                                         std::span<const float> weights) {
  auto n_units = split_units(length, split);
  if (!n_units.ok()) return n_units.status();
  const int64_t units = *n_units;
  const std::vector<int64_t> segments = segments_of(length, split);
  auto bounds = unit_bounds(units, weights);
  if (!bounds.ok()) return bounds.status();
  std::vector<Pieces> out(weights.size());
  int64_t start = 0;
  for (int64_t s : segments) {
    const int64_t unit = s / units;
    for (size_t d = 0; d < weights.size(); ++d) {
      out[d].push_back({start + (*bounds)[d] * unit, start + (*bounds)[d + 1] * unit});
    }
    start += s;
  }
  return out;
}

}  // namespace strata::meta
