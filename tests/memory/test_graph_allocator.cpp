#include <gtest/gtest.h>

#include <vector>

#include "core/ops.h"
#include "memory/free_list.h"
#include "memory/graph_allocator.h"

namespace strata::memory {
namespace {

using core::Tensor;

bool overlaps(const Tensor* a, const Tensor* b) {
  auto* a0 = static_cast<const uint8_t*>(a->data);
  auto* b0 = static_cast<const uint8_t*>(b->data);
  return a0 < b0 + b->nbytes() && b0 < a0 + a->nbytes();
}

TEST(FreeList, ReusesAndMergesReleasedBlocks) {
  FreeList fl(64);
  const size_t a = fl.allocate(100);
  const size_t b = fl.allocate(100);
  const size_t c = fl.allocate(100);
  EXPECT_EQ(fl.peak(), 384u);
  fl.release(a, 100);
  fl.release(b, 100);
  // a and b merged: a 200-byte request fits in the hole without growing.
  EXPECT_EQ(fl.allocate(200), a);
  EXPECT_EQ(fl.peak(), 384u);
  fl.release(c, 100);
  EXPECT_EQ(fl.allocate(64), c);
}

TEST(GraphAllocator, ReusesMemoryOfDeadTensorsButNotLiveOnes) {
  core::Context ctx;
  Tensor* x = ctx.new_tensor(core::Type::kF32, {256, 4, 1, 1}, "x");
  Tensor* w = ctx.new_tensor(core::Type::kF32, {256, 256, 1, 1}, "w");
  std::vector<float> wdata(256 * 256);
  auto wbuf = wrap_host_memory(wdata.data(), wdata.size() * sizeof(float));
  ASSERT_TRUE(wbuf->place(*w, 0).ok());

  Tensor* h = x;
  std::vector<Tensor*> chain;
  for (int i = 0; i < 6; ++i) {
    h = core::rms_norm(ctx, core::mul_mat(ctx, w, h), 1e-5f);
    chain.push_back(h);
  }
  Tensor* out = core::mul_mat(ctx, w, h);
  ASSERT_TRUE(ctx.ok()) << ctx.status().message();
  Tensor* outs[] = {out};
  core::Graph g = core::build_graph(outs);

  GraphAllocator galloc(host_buffer_type());
  ASSERT_TRUE(galloc.allocate(g).ok());
  // A chain needs about two live activations at a time, not one per node.
  EXPECT_LT(galloc.buffer_size(), 8 * x->nbytes());
  for (Tensor* n : g.nodes) {
    ASSERT_NE(n->data, nullptr) << n->name;
    // A node never overlaps its own inputs (no op here runs in place).
    for (Tensor* s : n->src) {
      if (s != nullptr && s != w) {
        EXPECT_FALSE(overlaps(n, s)) << n->name;
      }
    }
  }
  EXPECT_EQ(w->data, wdata.data());
}

TEST(GraphAllocator, ViewsAreNeverAllocatedAndPointIntoTheirSource) {
  core::Context ctx;
  Tensor* a = ctx.new_tensor(core::Type::kF32, {8, 6, 1, 1}, "a");
  Tensor* b = core::scale(ctx, a, 2.0f);
  Tensor* v = core::view(ctx, b, {8, 2, 1, 1}, b->nb, 2 * b->nb[1]);
  Tensor* t = core::transpose(ctx, v);
  Tensor* c = core::cont(ctx, t);
  ASSERT_TRUE(ctx.ok());
  Tensor* outs[] = {c};
  core::Graph g = core::build_graph(outs);
  GraphAllocator galloc(host_buffer_type());
  ASSERT_TRUE(galloc.allocate(g).ok());
  EXPECT_EQ(v->data, static_cast<uint8_t*>(b->data) + 2 * b->nb[1]);
  EXPECT_EQ(t->data, v->data);
  EXPECT_FALSE(overlaps(c, b));  // b is read through the view while c is written
}

TEST(GraphAllocator, ElementwiseOpsRunInPlaceOverDyingOperands) {
  core::Context ctx;
  Tensor* a = ctx.new_tensor(core::Type::kF32, {64, 4, 1, 1}, "a");
  Tensor* b = core::scale(ctx, a, 2.0f);
  Tensor* c = core::silu(ctx, b);
  Tensor* d = core::add(ctx, c, a);  // a stays live until here
  ASSERT_TRUE(ctx.ok());
  Tensor* outs[] = {d};
  core::Graph g = core::build_graph(outs);
  GraphAllocator galloc(host_buffer_type());
  ASSERT_TRUE(galloc.allocate(g).ok());
  EXPECT_EQ(c->data, b->data);  // b dies at c
  EXPECT_NE(b->data, a->data);  // a is an input read later
  EXPECT_FALSE(overlaps(d, a) && d->data != c->data);
}

// Attention's scores die at their softmax, which then takes their memory: an unfused prompt
// holds one score tensor at a time, not two.
TEST(GraphAllocator, SoftMaxRunsInPlaceOverDyingScores) {
  core::Context ctx;
  Tensor* k = ctx.new_tensor(core::Type::kF32, {16, 32, 1, 1}, "k");
  Tensor* q = ctx.new_tensor(core::Type::kF32, {16, 8, 1, 1}, "q");
  Tensor* mask = ctx.new_tensor(core::Type::kF32, {32, 8, 1, 1}, "mask");
  Tensor* kq = core::mul_mat(ctx, k, q);
  Tensor* probs = core::soft_max(ctx, kq, mask, 0.25f);
  Tensor* out = core::scale(ctx, core::rms_norm(ctx, probs, 1e-5f), 2.0f);
  ASSERT_TRUE(ctx.ok()) << ctx.status().message();
  Tensor* outs[] = {out};
  core::Graph g = core::build_graph(outs);
  GraphAllocator galloc(host_buffer_type());
  ASSERT_TRUE(galloc.allocate(g).ok());
  EXPECT_EQ(probs->data, kq->data);
  EXPECT_NE(probs->data, mask->data);
}

TEST(GraphAllocator, OutputsAreNeverReused) {
  core::Context ctx;
  Tensor* a = ctx.new_tensor(core::Type::kF32, {64, 4, 1, 1}, "a");
  Tensor* b = core::scale(ctx, a, 2.0f);
  Tensor* c = core::rms_norm(ctx, b, 1e-5f);
  Tensor* d = core::rms_norm(ctx, c, 1e-5f);
  ASSERT_TRUE(ctx.ok());
  Tensor* outs[] = {b, d};
  core::Graph g = core::build_graph(outs);
  GraphAllocator galloc(host_buffer_type());
  ASSERT_TRUE(galloc.allocate(g).ok());
  EXPECT_FALSE(overlaps(b, c));
  EXPECT_FALSE(overlaps(b, d));
}

}  // namespace
}  // namespace strata::memory
