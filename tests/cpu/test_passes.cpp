// Passes (cpu/passes.h): which neighbours run without a barrier between them, and that a graph
// computed in passes gives every node the bits it gets with a barrier after each node.
#include "cpu/passes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/graph.h"
#include "core/ops.h"
#include "cpu/graph_compute.h"
#include "test_util.h"

namespace strata::cpu {
namespace {

using core::Tensor;
using core::Type;

// A pre-norm decoder layer's nodes that do not attend (attention's own nodes have their
// tests elsewhere): norm, Q/K/V, output, residual, norm, gate/up, SwiGLU, down, residual.
struct Layer {
  core::Context ctx;
  core::Graph graph;
  std::vector<const Tensor*> work;  // the computed nodes, in order

  // V's weights may take another type (Q4_K_M files hold V in Q6_K).
  Layer(Type wtype, int64_t tokens, std::optional<Type> v_type = std::nullopt) {
    const int64_t e = 256, ff = 512;
    auto weight = [&](int64_t k, int64_t n, const char* name,
                      std::optional<Type> type = std::nullopt) {
      Tensor* w = ctx.new_tensor(type.value_or(wtype), {k, n, 1, 1}, name);
      w->flags |= core::kFlagWeight;
      return w;
    };
    auto named = [](Tensor* t, const char* name) {
      t->name = name;
      return t;
    };
    Tensor* x = ctx.new_tensor(Type::kF32, {e, tokens, 1, 1}, "x");
    Tensor* norm_w = ctx.new_tensor(Type::kF32, {e, 1, 1, 1}, "norm_w");
    Tensor* cur =
        named(core::mul(ctx, named(core::rms_norm(ctx, x, 1e-5f), "norm_rms"), norm_w), "norm");
    Tensor* v = named(core::mul_mat(ctx, weight(e, e, "wv", v_type), cur), "v");
    Tensor* k = named(core::mul_mat(ctx, weight(e, e, "wk"), cur), "k");
    Tensor* q = named(core::mul_mat(ctx, weight(e, e, "wq"), cur), "q");
    // Stands in for attention: something of each of Q, K and V, reaching V first as
    // attention does (through the cache write), so that the graph brings K and Q up to it.
    Tensor* kv_sum = named(core::add(ctx, v, k), "kv_sum");
    Tensor* mixed = named(core::mul(ctx, kv_sum, core::silu(ctx, q)), "mixed");
    Tensor* attn = named(core::mul_mat(ctx, weight(e, e, "wo"), mixed), "attn_out");
    Tensor* h = named(core::add(ctx, attn, x), "ffn_inp");
    Tensor* h_norm = named(
        core::mul(ctx, named(core::rms_norm(ctx, h, 1e-5f), "ffn_norm_rms"), norm_w), "ffn_norm");
    Tensor* gate = named(core::mul_mat(ctx, weight(e, ff, "wg"), h_norm), "gate");
    Tensor* up = named(core::mul_mat(ctx, weight(e, ff, "wu"), h_norm), "up");
    Tensor* act = named(core::swiglu(ctx, gate, up), "swiglu");
    Tensor* down = named(core::mul_mat(ctx, weight(ff, e, "wd"), act), "down");
    Tensor* out = named(core::add(ctx, core::add(ctx, down, h), x), "out");
    EXPECT_TRUE(ctx.ok()) << ctx.status().message();
    Tensor* outs[] = {out};
    graph = core::build_graph(outs);
    for (const Tensor* n : graph.nodes) {
      if (!core::is_view_op(n->op)) work.push_back(n);
    }
  }

  // The node names of each pass, joined by '+', passes joined by ' '.
  std::string plan() const {
    std::string s;
    for (const Pass& p : plan_passes(work)) {
      if (!s.empty()) s += ' ';
      for (size_t i = p.begin; i < p.end; ++i) s += (i > p.begin ? "+" : "") + work[i]->name;
    }
    return s;
  }
};

bool has_pass(const std::string& plan, const std::string& pass) {
  const std::string padded = " " + plan + " ";
  return padded.find(" " + pass + " ") != std::string::npos;
}

TEST(Passes, NormsAndProductsOfOneInputJoin) {
  for (Type t : {Type::kQ4_0, Type::kF32}) {
    Layer layer(t, 1);
    test::Placement placement(layer.graph);
    const std::string plan = layer.plan();
    SCOPED_TRACE(plan);
    EXPECT_TRUE(has_pass(plan, "norm_rms+norm"));
    EXPECT_TRUE(has_pass(plan, "v+k+q"));
    EXPECT_TRUE(has_pass(plan, "ffn_inp+ffn_norm_rms+ffn_norm"));
    EXPECT_TRUE(has_pass(plan, "gate+up"));
    // SwiGLU reads the products of the pass before it; the down projection reads SwiGLU's
    // only row, which one participant wrote.
    EXPECT_TRUE(has_pass(plan, "swiglu"));
    EXPECT_TRUE(has_pass(plan, "down"));
  }
}

TEST(Passes, ReadingAnotherRowOrWritingOverAnInputSplits) {
  core::Context ctx;
  Tensor* x = ctx.new_tensor(Type::kF32, {8, 4, 1, 1}, "x");
  Tensor* a = core::silu(ctx, x);
  Tensor* row = ctx.new_tensor(Type::kF32, {8, 1, 1, 1}, "row");
  Tensor* b = core::add(ctx, x, row);
  ASSERT_TRUE(ctx.ok());
  std::vector<float> mem(80, 0.0f);
  x->data = mem.data();
  row->data = mem.data() + 64;
  const std::vector<const Tensor*> nodes = {a, b};
  const auto joined = [&] { return plan_passes(nodes).size() == 1; };

  a->data = mem.data() + 32;
  b->data = mem.data() + 32;  // in place over a: the same rows
  EXPECT_TRUE(joined());
  b->data = mem.data();  // over x, which a reads row by row: the same rows
  EXPECT_TRUE(joined());
  b->data = mem.data() + 8;  // over x shifted by a row: a's next rows may not be read yet
  EXPECT_FALSE(joined());
  b->data = mem.data() + 36;  // half a row off a's output
  EXPECT_FALSE(joined());
  // b reads a's output as its broadcast row: every participant reads what one wrote.
  b->data = mem.data() + 32;
  row->data = a->data;
  EXPECT_FALSE(joined());
}

TEST(Passes, ProductsWritingWhatAnotherReadsSplit) {
  core::Context ctx;
  Tensor* x = ctx.new_tensor(Type::kF32, {16, 1, 1, 1}, "x");
  Tensor* w1 = ctx.new_tensor(Type::kF32, {16, 4, 1, 1}, "w1");
  Tensor* w2 = ctx.new_tensor(Type::kF32, {16, 4, 1, 1}, "w2");
  Tensor* p1 = core::mul_mat(ctx, w1, x);
  Tensor* p2 = core::mul_mat(ctx, w2, x);
  ASSERT_TRUE(ctx.ok());
  std::vector<float> mem(256, 0.0f);
  x->data = mem.data();
  w1->data = mem.data() + 16;
  w2->data = mem.data() + 80;
  p1->data = mem.data() + 144;
  p2->data = mem.data() + 148;
  const std::vector<const Tensor*> nodes = {p1, p2};
  EXPECT_EQ(plan_passes(nodes).size(), 1u);
  p2->data = mem.data() + 146;  // over half of p1's outputs
  EXPECT_EQ(plan_passes(nodes).size(), 2u);
  p2->data = mem.data() + 16;  // over w1, which p1 reads
  EXPECT_EQ(plan_passes(nodes).size(), 2u);
  p2->data = mem.data() + 4;  // over x, which both read
  EXPECT_EQ(plan_passes(nodes).size(), 2u);
}

TEST(Passes, SameBitsAsABarrierAfterEveryNode) {
  const std::pair<Type, Type> types[] = {{Type::kQ4_0, Type::kQ4_0}, {Type::kQ8_0, Type::kQ8_0},
                                         {Type::kF16, Type::kF16},   {Type::kF32, Type::kF32},
                                         {Type::kQ4_K, Type::kQ6_K}, {Type::kQ4_0, Type::kQ8_0}};
  for (const auto& [t, v_type] : types) {
    for (int64_t tokens : {1, 3, 7, 20}) {
      Layer layer(t, tokens, v_type);
      test::Placement placement(layer.graph);
      test::fill_leafs(layer.graph, {}, 7);
      std::vector<uint8_t> scratch;
      ThreadPool one(1);
      ASSERT_TRUE(compute_graph(layer.graph, one, scratch, Barriers::kPerNode).ok());
      std::vector<std::vector<uint8_t>> want;
      for (const Tensor* n : layer.work) want.push_back(test::read_bytes(*n));
      for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        for (Tensor* n : layer.graph.nodes) {
          if (!core::is_view_op(n->op)) std::fill_n(static_cast<uint8_t*>(n->data), n->nbytes(), 0);
        }
        ASSERT_TRUE(compute_graph(layer.graph, pool, scratch).ok());
        for (size_t i = 0; i < layer.work.size(); ++i) {
          EXPECT_EQ(test::read_bytes(*layer.work[i]), want[i])
              << core::type_name(t) << "/" << core::type_name(v_type) << ", " << tokens
              << " tokens, " << threads << " threads, " << layer.work[i]->name;
        }
      }
    }
  }
}

}  // namespace
}  // namespace strata::cpu
