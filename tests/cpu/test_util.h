// Helpers for the CPU tests: place a graph's tensors in memory, fill its leafs, read results.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include "core/graph.h"
#include "core/tensor.h"

namespace strata::cpu::test {

/// Owns the memory of a placed graph. Every tensor that owns its bytes (no view_src) gets its
/// own zeroed std::vector<uint8_t>; every view (including set_rows nodes) points into its
/// storage at view_offset. Core collapses view chains, so view_src is always the storage.
class Placement {
 public:
  explicit Placement(const core::Graph& g);

 private:
  std::deque<std::vector<uint8_t>> buffers_;
};

/// Explicit contents for some leafs (ids, positions, masks); the others are random.
struct Inputs {
  std::map<const core::Tensor*, std::vector<int32_t>> i32;
  std::map<const core::Tensor*, std::vector<float>> f32;
};

/// Fills every leaf of a placed graph, in graph order: explicit contents from `inputs`, else
/// uniform values in [-1, 1) rounded by the leaf type's from_float (so block types hold valid
/// blocks), else (i32 without contents, types without from_float) zeros. The same seed gives the
/// same bytes.
void fill_leafs(const core::Graph& g, const Inputs& inputs, uint64_t seed);

/// The elements of a placed tensor in logical order (i0 fastest), as floats.
std::vector<float> read_floats(const core::Tensor& t);

/// The bytes of a placed tensor in logical order: whole rows (block types) or elements.
std::vector<uint8_t> read_bytes(const core::Tensor& t);

/// max |a - b| / max(max |ref|, floor); infinite when NaNs or infinities disagree.
double relative_error(const std::vector<float>& got, const std::vector<float>& ref, double floor);

/// n uniform ints in [lo, hi) from a seed.
std::vector<int32_t> random_ints(int64_t n, int32_t lo, int32_t hi, uint64_t seed);

}  // namespace strata::cpu::test
