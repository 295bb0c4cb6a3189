// The conformance cases: every op, every supported type, odd shapes, non-contiguous inputs,
// with a tolerance per op (each one justified where it is defined).
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/ops.h"
#include "test_util.h"

namespace strata::cpu::test {

// Tolerances: max |cpu - ref| / max |ref| (see relative_error).

// One correctly rounded f32 operation per element (add, mul, scale), a type conversion done
// with the same rounding on both sides (cpy, get_rows, set_rows), or comparisons (argmax):
// the kernels must match the reference bit for bit.
inline constexpr double kExact = 0.0;
// A few f32 roundings per element where the reference has none: rms_norm rounds the mean and
// the scale to f32, silu/softmax use a vector exp within 2 ulp, rope rounds cos/sin to f32
// before rotating. A handful of 2^-24 (6e-8) relative errors (measured <= 1.4e-7); 1e-6
// leaves margin while any real error is O(1).
inline constexpr double kFewUlps = 1e-6;
// mul_mat: both sides round the activations identically; the kernel then sums K products in
// f32 (8 lanes, then across lanes), the reference in double. With random signs the error grows
// like sqrt(K) * 2^-24 times the typical product (measured <= 9e-7 of the output magnitude up
// to K = 4096); 1e-5 leaves a wide margin yet catches any wrong element (errors of O(1)).
inline constexpr double kDot = 1e-5;
// Outputs of a dot product are normalised by at least 1 (inputs are O(1)): with a single
// output element a chance cancellation can make |ref| tiny while the rounding error stays
// proportional to the products' magnitude.
inline constexpr double kDotFloor = 1.0;
// A chain of ops (a transformer block): the f32 differences of one op feed the next and can
// flip the rounding of a later value to q8_0 or f16 (the f16 KV cache: 2^-11 relative on one
// element, measured 1.7e-5 overall). 1e-3 bounds that while any real error is O(1).
inline constexpr double kChain = 1e-3;

/// One conformance case: builds its graph (registering explicit leaf contents in `Inputs`)
/// and returns the tensors to compare.
struct Case {
  std::string name;
  std::function<std::vector<core::Tensor*>(core::Context&, Inputs&)> build;
  double tol = kExact;
  double floor = 0.0;  ///< see relative_error
};

/// For gtest's messages.
inline std::ostream& operator<<(std::ostream& os, const Case& c) {
  return os << c.name;
}

/// Every type mul_mat takes as weights (and get_rows / cpy / set_rows handle).
inline constexpr core::Type kWeightTypes[] = {
    core::Type::kF32,  core::Type::kF16,  core::Type::kBF16, core::Type::kQ8_0, core::Type::kQ4_0,
    core::Type::kQ4_1, core::Type::kQ5_0, core::Type::kQ5_1, core::Type::kQ2_K, core::Type::kQ3_K,
    core::Type::kQ4_K, core::Type::kQ5_K, core::Type::kQ6_K};
inline constexpr core::Type kFloatTypes[] = {core::Type::kF32, core::Type::kF16, core::Type::kBF16};

/// A row length for type t: k rounded up to whole blocks (256 elements for the K-quants).
inline int64_t fit_k(core::Type t, int64_t k) {
  const int64_t b = core::block_size(t);
  return (k + b - 1) / b * b;
}

std::string tname(core::Type t);
core::Tensor* leaf(core::Context& ctx, core::Type t, core::Shape ne);
core::Tensor* f32(core::Context& ctx, core::Shape ne);
/// A view of rows [first, first + rows) of a 2-d tensor.
core::Tensor* row_window(core::Context& ctx, core::Tensor* t, int64_t first, int64_t rows);
/// An i32 leaf with the given contents.
core::Tensor* ids_leaf(core::Context& ctx, Inputs& in, std::vector<int32_t> ids, core::Shape ne);
/// n values uniform in [lo, hi).
std::vector<float> uniform(int64_t n, float lo, float hi, uint64_t seed);
/// A causal mask [width, height] for nq queries over nk keys: query i (at position
/// nk - nq + i) sees keys up to its own position; everything else is -inf.
std::vector<float> causal_mask(int64_t nk, int64_t nq, int64_t width, int64_t height);

// Case tables by family.
void mul_mat_cases(std::vector<Case>& out);
void data_cases(std::vector<Case>& out);  ///< get_rows, cpy, set_rows
/// elementwise, rms_norm, rope, soft_max, argmax, sum_rows, top_k
void math_cases(std::vector<Case>& out);
void graph_cases(std::vector<Case>& out);  ///< whole transformer blocks
void moe_cases(std::vector<Case>& out);    ///< mul_mat_id and a mixture-of-experts FFN
std::vector<Case> all_cases();

}  // namespace strata::cpu::test
