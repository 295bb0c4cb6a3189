// Bad input reaches compute_graph as a Status, never a crash: ids out of range, unplaced
// tensors, nodes the kernels do not support.
#include <gtest/gtest.h>

#include <vector>

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

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(Errors, GetRowsIdOutOfRange) {
  for (int32_t bad : {10, -1}) {
    for (int n : {1, 2, 3}) {
      Context ctx;
      test::Inputs in;
      Tensor* table = ctx.new_tensor(Type::kF16, {8, 10, 1, 1});
      Tensor* ids = ctx.new_tensor(Type::kI32, {3, 1, 1, 1});
      in.i32[ids] = {1, bad, 2};
      Tensor* rows = core::get_rows(ctx, table, ids);
      rows->name = "embeddings";
      Tensor* out = core::scale(ctx, rows, 2.0f);
      ASSERT_TRUE(ctx.ok());
      const core::Graph g = core::build_graph(std::vector<Tensor*>{out});
      test::Placement placement(g);
      test::fill_leafs(g, in, 1);
      ThreadPool pool(n);
      std::vector<uint8_t> scratch;
      const Status s = compute_graph(g, pool, scratch);
      EXPECT_EQ(s.code(), ErrorCode::kOutOfRange);
      EXPECT_TRUE(contains(s.message(), "embeddings")) << s.message();
      EXPECT_TRUE(contains(s.message(), std::to_string(bad))) << s.message();
      // The graph stopped at the failing node: the next one was not computed.
      for (float v : test::read_floats(*out)) EXPECT_EQ(v, 0.0f);
      EXPECT_EQ(reference::compute_graph(g).code(), ErrorCode::kOutOfRange);
    }
  }
}

TEST(Errors, SetRowsIdOutOfRangeWritesNothing) {
  for (int n : {1, 2, 3}) {
    Context ctx;
    test::Inputs in;
    Tensor* cache = ctx.new_tensor(Type::kQ8_0, {32, 4, 1, 1});
    Tensor* ids = ctx.new_tensor(Type::kI32, {3, 1, 1, 1});
    in.i32[ids] = {0, 1, 4};
    Tensor* stored = core::set_rows(ctx, cache, ctx.new_tensor(Type::kF32, {32, 3, 1, 1}), ids);
    ASSERT_TRUE(ctx.ok());
    const core::Graph g = core::build_graph(std::vector<Tensor*>{stored});
    test::Placement placement(g);
    test::fill_leafs(g, in, 2);
    const std::vector<uint8_t> before = test::read_bytes(*cache);
    ThreadPool pool(n);
    std::vector<uint8_t> scratch;
    const Status s = compute_graph(g, pool, scratch);
    EXPECT_EQ(s.code(), ErrorCode::kOutOfRange) << s.message();
    EXPECT_TRUE(contains(s.message(), "set_rows")) << s.message();
    EXPECT_EQ(test::read_bytes(*cache), before);
    EXPECT_EQ(reference::compute_graph(g).code(), ErrorCode::kOutOfRange);
    EXPECT_EQ(test::read_bytes(*cache), before);
  }
}

TEST(Errors, PoolStillWorksAfterAFailedGraph) {
  ThreadPool pool(3);
  std::vector<uint8_t> scratch;
  Context ctx;
  test::Inputs in;
  Tensor* ids = ctx.new_tensor(Type::kI32, {2, 1, 1, 1});
  in.i32[ids] = {0, 99};
  Tensor* bad = core::get_rows(ctx, ctx.new_tensor(Type::kF32, {4, 3, 1, 1}), ids);
  Tensor* good = core::silu(ctx, ctx.new_tensor(Type::kF32, {40, 9, 1, 1}));
  ASSERT_TRUE(ctx.ok());
  const core::Graph g_bad = core::build_graph(std::vector<Tensor*>{bad});
  const core::Graph g_good = core::build_graph(std::vector<Tensor*>{good});
  test::Placement p_bad(g_bad);
  test::Placement p_good(g_good);
  test::fill_leafs(g_bad, in, 3);
  test::fill_leafs(g_good, in, 3);
  for (int i = 0; i < 20; ++i) {
    EXPECT_FALSE(compute_graph(g_bad, pool, scratch).ok());
    EXPECT_TRUE(compute_graph(g_good, pool, scratch).ok());
  }
}

TEST(Errors, UnplacedTensorIsAnInternalErrorNamingIt) {
  Context ctx;
  Tensor* a = ctx.new_tensor(Type::kF32, {8, 2, 1, 1}, "activations");
  Tensor* out = core::scale(ctx, a, 2.0f);
  const core::Graph g = core::build_graph(std::vector<Tensor*>{out});
  ThreadPool pool(2);
  std::vector<uint8_t> scratch;
  Status s = compute_graph(g, pool, scratch);
  EXPECT_EQ(s.code(), ErrorCode::kInternal);
  EXPECT_TRUE(contains(s.message(), out->name)) << s.message();

  std::vector<uint8_t> out_bytes(out->nbytes());
  out->data = out_bytes.data();
  s = compute_graph(g, pool, scratch);
  EXPECT_EQ(s.code(), ErrorCode::kInternal);
  EXPECT_TRUE(contains(s.message(), "activations")) << s.message();
}

TEST(Errors, UnsupportedNodeIsRejectedBeforeAnythingRuns) {
  Context ctx;
  Tensor* w = ctx.new_tensor(Type::kQ8_0, {32, 4, 1, 1});
  Tensor* first = core::scale(ctx, ctx.new_tensor(Type::kF32, {32, 2, 1, 1}), 3.0f);
  Tensor* mm = core::mul_mat(ctx, w, first);
  ASSERT_TRUE(ctx.ok());
  const core::Graph g = core::build_graph(std::vector<Tensor*>{mm});
  test::Placement placement(g);
  test::fill_leafs(g, {}, 4);
  // A weight type no kernel handles, as a hand-built node could carry.
  w->type = Type::kQ4_1;
  ThreadPool pool(2);
  std::vector<uint8_t> scratch;
  const Status s = compute_graph(g, pool, scratch);
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported);
  EXPECT_TRUE(contains(s.message(), "mul_mat")) << s.message();
  for (float v : test::read_floats(*first)) EXPECT_EQ(v, 0.0f);  // nothing computed
  EXPECT_EQ(reference::compute_graph(g).code(), ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace strata::cpu
