// Every op, every supported type, odd shapes and non-contiguous inputs: the CPU kernels run
// with 1, 2 and 3 threads must match the naive reference within a per-op tolerance, and must
// give the same bits for every thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "case_runner.h"
#include "conformance_cases.h"
#include "core/context.h"
#include "core/graph.h"
#include "core/ops.h"
#include "cpu/graph_compute.h"
#include "cpu/reference/reference.h"
#include "test_util.h"

namespace strata::cpu {
namespace {

using core::Context;
using core::Tensor;
using core::Type;
using test::Case;
using test::causal_mask;
using test::f32;
using test::ids_leaf;
using test::Inputs;
using test::kWeightTypes;
using test::leaf;

using Outputs = test::CaseOutputs;

// Seeds the case's leafs the same way every time.
Outputs run(const Case& c, int n_threads) {
  return test::run_case(c, n_threads, 7);
}

class Conformance : public ::testing::TestWithParam<Case> {};

TEST_P(Conformance, MatchesReferenceAndIsThreadCountInvariant) {
  const Case& c = GetParam();
  const Outputs ref = run(c, 0);
  Outputs first;
  for (int n_threads : {1, 2, 3}) {
    const Outputs got = run(c, n_threads);
    ASSERT_EQ(got.values.size(), ref.values.size());
    for (size_t i = 0; i < ref.values.size(); ++i) {
      const double err = test::relative_error(got.values[i], ref.values[i], c.floor);
      EXPECT_LE(err, c.tol) << "output " << i << " with " << n_threads << " threads";
      if (std::getenv("STRATA_TEST_VERBOSE") != nullptr) {
        std::printf("%-48s out %zu threads %d rel err %.3g\n", c.name.c_str(), i, n_threads, err);
      }
    }
    if (n_threads == 1) {
      first = got;
    } else {
      EXPECT_EQ(got.bytes, first.bytes)
          << "results differ between 1 and " << n_threads << " threads";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, Conformance, ::testing::ValuesIn(test::all_cases()),
                         [](const ::testing::TestParamInfo<Case>& p) { return p.param.name; });

// Bigger shapes (many chunks per thread) and more thread counts than the table: every kernel
// whose work split depends on the thread count must still give the same bits.
TEST(ThreadInvariance, BitIdenticalAcrossThreadCounts) {
  const auto build = [](Context& ctx, Inputs& in) {
    std::vector<Tensor*> outs;
    for (Type t : kWeightTypes) {
      outs.push_back(core::mul_mat(ctx, leaf(ctx, t, {256, 203, 1, 1}), f32(ctx, {256, 1, 1, 1})));
      outs.push_back(core::mul_mat(ctx, leaf(ctx, t, {256, 131, 2, 1}), f32(ctx, {256, 77, 4, 1})));
    }
    outs.push_back(core::mul_mat(ctx, core::transpose(ctx, leaf(ctx, Type::kF16, {45, 64, 3, 1})),
                                 core::permute(ctx, f32(ctx, {64, 3, 9, 1}), {0, 2, 1, 3})));
    Tensor* mask = f32(ctx, {300, 11, 1, 1});
    in.f32[mask] = causal_mask(300, 11, 300, 11);
    outs.push_back(core::soft_max(ctx, f32(ctx, {300, 11, 7, 1}), mask, 0.3f));
    outs.push_back(core::rms_norm(ctx, f32(ctx, {1000, 29, 1, 1}), 1e-5f));
    Tensor* pos = ids_leaf(ctx, in, test::random_ints(13, 0, 5000, 61), {13, 1, 1, 1});
    outs.push_back(core::rope(ctx, f32(ctx, {64, 8, 13, 1}), pos,
                              {64, core::RopeMode::kNeox, 10000.0f, 1.0f}));
    outs.push_back(core::silu(ctx, f32(ctx, {333, 17, 1, 1})));
    return outs;
  };
  const Case c{"invariance", build, 0.0, 0.0};
  const Outputs base = run(c, 1);
  for (int n : {2, 3, 4, 5, 7, 8}) {
    const Outputs got = run(c, n);
    EXPECT_EQ(got.bytes, base.bytes) << n << " threads";
  }
}

// Micro-batching must not change any output: each column (activation row) and each weight row
// of a product computed on its own, or in any other grouping, gives the bits of the whole.
TEST(MicroBatchInvariance, SplittingRowsOrColumnsKeepsBits) {
  constexpr int64_t kM = 37, kN = 13;
  constexpr int64_t kCols[][2] = {{0, 1}, {1, 1}, {2, 2}, {4, 4}, {8, 5}};
  constexpr int64_t kRows[][2] = {{0, 1}, {1, 6}, {7, 30}};
  for (Type t : kWeightTypes) {
    const int64_t k = test::fit_k(t, 160);
    const auto build = [&](Context& ctx, Inputs&) {
      Tensor* w = leaf(ctx, t, {k, kM, 1, 1});
      Tensor* x = f32(ctx, {k, kN, 1, 1});
      std::vector<Tensor*> outs = {core::mul_mat(ctx, w, x)};
      for (const auto& [first, n] : kCols) {
        outs.push_back(core::mul_mat(ctx, w, test::row_window(ctx, x, first, n)));
      }
      for (const auto& [first, n] : kRows) {
        outs.push_back(core::mul_mat(ctx, test::row_window(ctx, w, first, n), x));
      }
      return outs;
    };
    const Case c{"micro_batches_" + test::tname(t), build, 0.0, 0.0};
    for (int n_threads : {1, 3}) {
      const Outputs got = run(c, n_threads);
      ASSERT_EQ(got.values.size(), 1 + std::size(kCols) + std::size(kRows));
      const std::vector<float>& whole = got.values[0];  // [kM, kN], m fastest
      size_t out = 1;
      for (const auto& [first, n] : kCols) {
        const std::vector<float>& part = got.values[out++];
        const std::vector<float> expect(whole.begin() + first * kM,
                                        whole.begin() + (first + n) * kM);
        EXPECT_EQ(std::memcmp(part.data(), expect.data(), part.size() * sizeof(float)), 0)
            << c.name << " columns " << first << "+" << n << ", " << n_threads << " threads";
      }
      for (const auto& [first, n] : kRows) {
        const std::vector<float>& part = got.values[out++];
        for (int64_t col = 0; col < kN; ++col) {
          EXPECT_EQ(std::memcmp(part.data() + col * n, whole.data() + col * kM + first,
                                static_cast<size_t>(n) * sizeof(float)),
                    0)
              << c.name << " rows " << first << "+" << n << " column " << col << ", " << n_threads
              << " threads";
        }
      }
    }
  }
}

}  // namespace
}  // namespace strata::cpu
