// mul_mat_id against mul_mat: every (slot, token) column must carry the bits of mul_mat of its
// expert's matrix with its activation row, for every weight type and thread count; and bad
// expert ids fail the node without writing.
#include <gtest/gtest.h>

#include <cstring>
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

TEST(MulMatId, EachColumnIsBitIdenticalToMulMat) {
  // Enough tokens that experts get more rows than decode takes (the packed kernels' panels).
  constexpr int64_t kM = 37, kExperts = 5, kUsed = 3, kTokens = 15;
  const std::vector<int32_t> ids = test::random_ints(kUsed * kTokens, 0, kExperts, 91);
  for (Type t : test::kWeightTypes) {
    for (bool per_slot : {false, true}) {
      // Not a multiple of 16 for the float types: there mul_mat sums in llama.cpp's vector-dot
      // order too, which mul_mat_id always takes (dot.h's vector_order_tile).
      const int64_t k = test::fit_k(t, 168);
      const auto build = [&](Context& ctx, test::Inputs& in) {
        Tensor* w = test::leaf(ctx, t, {k, kM, kExperts, 1});
        Tensor* x = test::f32(ctx, {k, per_slot ? kUsed : 1, kTokens, 1});
        Tensor* id = test::ids_leaf(ctx, in, ids, {kUsed, kTokens, 1, 1});
        std::vector<Tensor*> outs = {core::mul_mat_id(ctx, w, x, id)};
        for (int64_t tok = 0; tok < kTokens; ++tok) {
          for (int64_t i = 0; i < kUsed; ++i) {
            const int32_t e = ids[static_cast<size_t>(tok * kUsed + i)];
            Tensor* we = core::view(ctx, w, {k, kM, 1, 1}, w->nb, e * w->nb[2]);
            Tensor* xr = core::view(ctx, x, {k, 1, 1, 1}, x->nb,
                                    (per_slot ? i : 0) * x->nb[1] + tok * x->nb[2]);
            outs.push_back(core::mul_mat(ctx, we, xr));
          }
        }
        return outs;
      };
      const test::Case c{"mul_mat_id_vs_mul_mat_" + test::tname(t), build, 0.0, 0.0};
      for (int n_threads : {1, 3}) {
        const test::CaseOutputs got = test::run_case(c, n_threads, 5);
        ASSERT_EQ(got.values.size(), static_cast<size_t>(1 + kUsed * kTokens));
        for (int64_t col = 0; col < kUsed * kTokens; ++col) {
          const std::vector<float>& one = got.values[static_cast<size_t>(1 + col)];
          EXPECT_EQ(std::memcmp(one.data(), got.values[0].data() + col * kM, kM * sizeof(float)), 0)
              << c.name << (per_slot ? " per slot" : " shared") << " column " << col << ", "
              << n_threads << " threads";
        }
      }
    }
  }
}

TEST(MulMatId, ExpertIdOutOfRangeFailsAndWritesNothing) {
  for (int32_t bad : {4, -1}) {
    for (int n : {1, 2, 3}) {
      Context ctx;
      test::Inputs in;
      Tensor* w = ctx.new_tensor(Type::kQ8_0, {64, 6, 4, 1});
      Tensor* ids = ctx.new_tensor(Type::kI32, {2, 3, 1, 1});
      in.i32[ids] = {0, 1, 2, bad, 3, 3};
      Tensor* out = core::mul_mat_id(ctx, w, ctx.new_tensor(Type::kF32, {64, 1, 3, 1}), ids);
      out->name = "ffn_up_exps";
      ASSERT_TRUE(ctx.ok());
      const core::Graph g = core::build_graph(std::vector<Tensor*>{out});
      test::Placement placement(g);
      test::fill_leafs(g, in, 1);
      ThreadPool pool(n);
      std::vector<uint8_t> scratch;
      const Status s = compute_graph(g, pool, scratch);
      EXPECT_EQ(s.code(), ErrorCode::kOutOfRange);
      EXPECT_NE(s.message().find("ffn_up_exps"), std::string::npos) << s.message();
      EXPECT_NE(s.message().find(std::to_string(bad)), std::string::npos) << s.message();
      for (float v : test::read_floats(*out)) EXPECT_EQ(v, 0.0f);
      EXPECT_EQ(reference::compute_graph(g).code(), ErrorCode::kOutOfRange);
    }
  }
}

TEST(MulMatId, BadArgumentsAreConstructionErrors) {
  const auto fails = [](auto&& build) {
    Context ctx;
    build(ctx);
    return !ctx.ok() && ctx.status().message().find("mul_mat_id") != std::string::npos;
  };
  const auto w = [](Context& ctx) { return test::leaf(ctx, Type::kQ4_0, {64, 8, 4, 1}); };
  const auto ids = [](Context& ctx, int64_t used, int64_t tokens) {
    return ctx.new_tensor(Type::kI32, {used, tokens, 1, 1});
  };
  EXPECT_TRUE(fails([&](Context& ctx) {  // inner dimensions differ
    core::mul_mat_id(ctx, w(ctx), test::f32(ctx, {32, 1, 3, 1}), ids(ctx, 2, 3));
  }));
  EXPECT_TRUE(fails([&](Context& ctx) {  // tokens differ
    core::mul_mat_id(ctx, w(ctx), test::f32(ctx, {64, 1, 4, 1}), ids(ctx, 2, 3));
  }));
  EXPECT_TRUE(fails([&](Context& ctx) {  // neither shared nor one row per slot
    core::mul_mat_id(ctx, w(ctx), test::f32(ctx, {64, 3, 3, 1}), ids(ctx, 2, 3));
  }));
  EXPECT_TRUE(fails([&](Context& ctx) {  // ids not i32
    core::mul_mat_id(ctx, w(ctx), test::f32(ctx, {64, 1, 3, 1}), test::f32(ctx, {2, 3, 1, 1}));
  }));
  EXPECT_TRUE(fails([&](Context& ctx) {  // f16 activations
    core::mul_mat_id(ctx, w(ctx), test::leaf(ctx, Type::kF16, {64, 1, 3, 1}), ids(ctx, 2, 3));
  }));
  Context ok;
  Tensor* out = core::mul_mat_id(ok, w(ok), test::f32(ok, {64, 2, 3, 1}), ids(ok, 2, 3));
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(out->ne, (std::array<int64_t, 4>{8, 2, 3, 1}));
}

TEST(TopK, BadKIsAConstructionError) {
  for (int64_t k : {0, 11}) {
    Context ctx;
    core::top_k(ctx, test::f32(ctx, {10, 3, 1, 1}), k);
    EXPECT_FALSE(ctx.ok()) << k;
  }
}

}  // namespace
}  // namespace strata::cpu
