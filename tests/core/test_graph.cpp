#include <gtest/gtest.h>

#include <algorithm>

#include "core/graph.h"
#include "core/ops.h"

namespace strata::core {
namespace {

TEST(Ops, ViewsShareTheirSourceAndCollapseChains) {
  Context ctx;
  Tensor* a = ctx.new_tensor(Type::kF32, {8, 4, 2, 1}, "a");
  Tensor* r = reshape(ctx, a, {32, 2, 1, 1});
  Tensor* p = permute(ctx, r, {1, 0, 2, 3});
  Tensor* v = view(ctx, p, {2, 4, 1, 1}, p->nb, 0);
  ASSERT_TRUE(ctx.ok()) << ctx.status().message();
  EXPECT_EQ(p->ne, (Shape{2, 32, 1, 1}));
  EXPECT_EQ(p->nb[0], a->nb[0] * 32);
  EXPECT_EQ(v->view_src, a);
  EXPECT_EQ(r->view_src, a);
  EXPECT_FALSE(p->is_contiguous());
  EXPECT_TRUE(r->is_contiguous());
}

TEST(Ops, BadArgumentsAreRecordedNotFatal) {
  Context ctx;
  Tensor* a = ctx.new_tensor(Type::kF32, {8, 4, 1, 1});
  Tensor* b = ctx.new_tensor(Type::kF32, {6, 4, 1, 1});
  Tensor* c = mul_mat(ctx, a, b);
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(ctx.ok());
  EXPECT_NE(ctx.status().message().find("mul_mat"), std::string::npos);
  // The first error is kept.
  (void)add(ctx, a, ctx.new_tensor(Type::kF32, {3, 1, 1, 1}));
  EXPECT_NE(ctx.status().message().find("mul_mat"), std::string::npos);
}

TEST(Ops, ShapeRules) {
  Context ctx;
  Tensor* w = ctx.new_tensor(Type::kQ4_0, {64, 16, 1, 1});
  Tensor* x = ctx.new_tensor(Type::kF32, {64, 5, 1, 1});
  EXPECT_EQ(mul_mat(ctx, w, x)->ne, (Shape{16, 5, 1, 1}));
  Tensor* k = ctx.new_tensor(Type::kF16, {32, 10, 2, 1});
  Tensor* q = ctx.new_tensor(Type::kF32, {32, 3, 8, 1});
  EXPECT_EQ(mul_mat(ctx, k, q)->ne, (Shape{10, 3, 8, 1}));  // GQA broadcast
  Tensor* ids = ctx.new_tensor(Type::kI32, {7, 1, 1, 1});
  EXPECT_EQ(get_rows(ctx, w, ids)->ne, (Shape{64, 7, 1, 1}));
  EXPECT_EQ(argmax(ctx, x)->ne, (Shape{5, 1, 1, 1}));
  EXPECT_TRUE(ctx.ok()) << ctx.status().message();
  (void)transpose(ctx, w);  // a quantized row cannot be split
  EXPECT_FALSE(ctx.ok());
}

// mul_mat's mask covers [m, n] with dense f32 rows and is broadcast over dims 2 and 3.
TEST(Ops, MulMatMaskMustCoverTheOutputs) {
  Context ok_ctx;
  Tensor* k = ok_ctx.new_tensor(Type::kF16, {32, 10, 2, 1});
  Tensor* q = ok_ctx.new_tensor(Type::kF32, {32, 3, 8, 1});
  Tensor* mask = ok_ctx.new_tensor(Type::kF32, {12, 4, 1, 1});
  EXPECT_EQ(mul_mat(ok_ctx, k, q, mask)->src[2], mask);
  EXPECT_TRUE(ok_ctx.ok()) << ok_ctx.status().message();
  const auto rejects = [](Type type, Shape mask_ne) {
    Context ctx;
    Tensor* kk = ctx.new_tensor(Type::kF16, {32, 10, 2, 1});
    Tensor* qq = ctx.new_tensor(Type::kF32, {32, 3, 8, 1});
    (void)mul_mat(ctx, kk, qq, ctx.new_tensor(type, mask_ne));
    return !ctx.ok() && ctx.status().message().find("mask") != std::string::npos;
  };
  EXPECT_TRUE(rejects(Type::kF32, {9, 3, 1, 1}));   // fewer columns than weight rows
  EXPECT_TRUE(rejects(Type::kF32, {10, 2, 1, 1}));  // fewer rows than activation rows
  EXPECT_TRUE(rejects(Type::kF32, {10, 3, 8, 1}));  // one mask per head
  EXPECT_TRUE(rejects(Type::kF16, {10, 3, 1, 1}));
}

TEST(Ops, ViewPastTheEndIsRejected) {
  Context ctx;
  Tensor* a = ctx.new_tensor(Type::kF32, {8, 4, 1, 1});
  (void)view(ctx, a, {8, 2, 1, 1}, a->nb, 3 * a->nb[1]);
  EXPECT_FALSE(ctx.ok());
}

TEST(Graph, TopologicalOrderAndStableNames) {
  auto build = [](Context& ctx) {
    Tensor* x = ctx.new_tensor(Type::kF32, {4, 2, 1, 1}, "x");
    Tensor* y = scale(ctx, x, 2.0f);
    Tensor* z = add(ctx, silu(ctx, y), y);
    Tensor* outs[] = {z};
    return build_graph(outs);
  };
  Context c1, c2;
  Graph g1 = build(c1), g2 = build(c2);
  ASSERT_EQ(g1.nodes.size(), 3u);
  ASSERT_EQ(g1.leafs.size(), 1u);
  for (size_t i = 0; i < g1.nodes.size(); ++i) {
    EXPECT_EQ(g1.nodes[i]->name, g2.nodes[i]->name);
    for (Tensor* s : g1.nodes[i]->src) {
      if (s == nullptr || s->op == Op::kNone) continue;
      const auto pos = std::find(g1.nodes.begin(), g1.nodes.end(), s) - g1.nodes.begin();
      EXPECT_LT(static_cast<size_t>(pos), i);
    }
  }
  EXPECT_TRUE(g1.nodes.back()->has_flag(kFlagOutput));
}

TEST(Graph, CacheReadsAreOrderedAfterTheWrite) {
  Context ctx;
  Tensor* cache = ctx.new_tensor(Type::kF16, {8, 16, 1, 1}, "cache");
  Tensor* rows = ctx.new_tensor(Type::kF32, {8, 2, 1, 1}, "rows");
  Tensor* ids = ctx.new_tensor(Type::kI32, {2, 1, 1, 1}, "ids");
  Tensor* written = set_rows(ctx, cache, rows, ids);
  Tensor* read = view(ctx, written, {8, 4, 1, 1}, cache->nb, 0);
  Tensor* q = ctx.new_tensor(Type::kF32, {8, 1, 1, 1}, "q");
  Tensor* out = mul_mat(ctx, read, q);
  ASSERT_TRUE(ctx.ok()) << ctx.status().message();
  Tensor* outs[] = {out};
  Graph g = build_graph(outs);
  const auto w = std::find(g.nodes.begin(), g.nodes.end(), written);
  const auto r = std::find(g.nodes.begin(), g.nodes.end(), read);
  ASSERT_NE(w, g.nodes.end());
  EXPECT_LT(w, r);
  EXPECT_EQ(written->view_src, cache);
}

TEST(Graph, ProductsOfOneInputRunTogether) {
  // Attention's shape: V's product feeds a cache write that the DFS reaches before K's
  // product, and Q's comes last; all three read x.
  Context ctx;
  Tensor* x = ctx.new_tensor(Type::kF32, {8, 1, 1, 1}, "x");
  Tensor* cur = scale(ctx, x, 0.5f);
  auto weight = [&](const char* name) { return ctx.new_tensor(Type::kF32, {8, 8, 1, 1}, name); };
  Tensor* v = mul_mat(ctx, weight("wv"), cur);
  Tensor* v_used = silu(ctx, v);
  Tensor* k = mul_mat(ctx, weight("wk"), cur);
  Tensor* k_used = add(ctx, v_used, scale(ctx, k, 2.0f));
  Tensor* q = mul_mat(ctx, weight("wq"), cur);
  Tensor* out = add(ctx, k_used, silu(ctx, q));
  // A product of the same input that needs a node computed after the first product stays.
  Tensor* late = mul_mat(ctx, v_used, cur);
  Tensor* last = add(ctx, out, late);
  ASSERT_TRUE(ctx.ok()) << ctx.status().message();
  Tensor* outs[] = {last};
  Graph g = build_graph(outs);
  const auto at = [&](const Tensor* t) { return std::find(g.nodes.begin(), g.nodes.end(), t); };
  ASSERT_NE(at(v), g.nodes.end());
  EXPECT_EQ(at(k), at(v) + 1);
  EXPECT_EQ(at(q), at(v) + 2);
  EXPECT_GT(at(late), at(v_used));
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (Tensor* s : g.nodes[i]->src) {
      if (s == nullptr || s->op == Op::kNone) continue;
      EXPECT_LT(at(s) - g.nodes.begin(), static_cast<std::ptrdiff_t>(i)) << g.nodes[i]->name;
    }
  }
}

}  // namespace
}  // namespace strata::core
