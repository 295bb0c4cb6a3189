// Graphs as bytes for another rank: the structure decodes to the same graph, placements travel
// as changes, and bytes the encoder did not make are refused without a crash.
#include "mpi/wire_graph.h"

#include <gtest/gtest.h>

#include "core/context.h"
#include "core/ops.h"

namespace strata::mpi {
namespace {

struct Built {
  core::Context ctx;
  core::Graph graph;
};

// w [8, 4] (weight, external), x [8, 2] (input, external) -> mul_mat -> scale -> a view of it
// -> rms_norm.
void build(Built& b) {
  core::Tensor* w = b.ctx.new_tensor(core::Type::kF32, {8, 4, 1, 1}, "w");
  core::Tensor* x = b.ctx.new_tensor(core::Type::kF32, {8, 2, 1, 1}, "x");
  core::Tensor* y = core::mul_mat(b.ctx, w, x);
  y->name = "y";
  core::Tensor* s = core::scale(b.ctx, y, 0.5f);
  s->name = "s";
  core::Tensor* v = core::view(b.ctx, s, {4, 1, 1, 1}, s->nb, 0);
  v->name = "v";
  core::Tensor* n = core::rms_norm(b.ctx, v, 1e-5f);
  n->name = "n";
  b.graph.nodes = {y, s, v, n};
}

TEST(WireGraph, StructureDecodesToTheSameGraph) {
  Built b;
  build(b);
  const EncodedGraph enc = encode_graph(b.graph);
  auto dec = decode_graph(enc.structure);
  ASSERT_TRUE(dec.ok()) << dec.status().message();
  ASSERT_EQ(dec->graph.nodes.size(), b.graph.nodes.size());
  ASSERT_EQ(dec->tensors.size(), enc.tensors.size());
  for (size_t i = 0; i < b.graph.nodes.size(); ++i) {
    const core::Tensor& want = *b.graph.nodes[i];
    const core::Tensor& got = *dec->graph.nodes[i];
    EXPECT_EQ(got.name, want.name);
    EXPECT_EQ(got.op, want.op);
    EXPECT_EQ(got.type, want.type);
    EXPECT_EQ(got.ne, want.ne);
    EXPECT_EQ(got.nb, want.nb);
    EXPECT_EQ(got.view_offset, want.view_offset);
    EXPECT_EQ(got.params, want.params);
    for (size_t k = 0; k < core::kMaxSrc; ++k) {
      EXPECT_EQ(got.src[k] == nullptr, want.src[k] == nullptr) << want.name << " src " << k;
      if (got.src[k] != nullptr) {
        EXPECT_EQ(got.src[k]->name, want.src[k]->name);
      }
    }
    EXPECT_EQ(got.view_src == nullptr, want.view_src == nullptr);
  }
  // Every tensor the nodes read is listed, externals included, in the decoded order.
  for (size_t i = 0; i < enc.tensors.size(); ++i) {
    EXPECT_EQ(dec->tensors[i].name, enc.tensors[i]->name);
  }
}

TEST(WireGraph, SameShapeSameStructure) {
  Built a, b;
  build(a);
  build(b);
  EXPECT_EQ(encode_graph(a.graph).structure, encode_graph(b.graph).structure);
  b.graph.nodes.back()->ne[1] = 1;  // another shape is another structure
  b.graph.nodes[1]->ne[1] = 1;
  EXPECT_NE(encode_graph(a.graph).structure, encode_graph(b.graph).structure);
}

TEST(WireGraph, PlacementChangesRoundTrip) {
  std::vector<Placement> before = {{1, 0}, {1, 64}, {2, 0}, {3, 128}};
  std::vector<Placement> now = before;
  EXPECT_EQ(encode_changes(before, now).size(), encode_changes(before, before).size());
  now[2] = {2, 4096};
  now[3] = {5, 0};
  std::vector<Placement> applied = before;
  ASSERT_TRUE(apply_changes(encode_changes(before, now), applied).ok());
  EXPECT_EQ(applied, now);
  // A different count sends everything.
  std::vector<Placement> fresh;
  ASSERT_TRUE(apply_changes(encode_changes({}, now), fresh).ok());
  EXPECT_EQ(fresh, now);
  // Fewer bytes for one change than for all of them.
  EXPECT_LT(encode_changes(before, now).size(), encode_changes({}, now).size());
}

TEST(WireGraph, BytesItDidNotMakeAreMalformed) {
  Built b;
  build(b);
  const std::string bytes = encode_graph(b.graph).structure;
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto dec = decode_graph(std::string_view(bytes).substr(0, n));
    ASSERT_FALSE(dec.ok()) << "a prefix of " << n << " bytes decoded";
    EXPECT_EQ(dec.status().code(), ErrorCode::kMalformed);
  }
  // Flipped bytes decode or are refused; never a crash or a graph whose sources point outside.
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    auto dec = decode_graph(bad);
    if (!dec.ok()) {
      EXPECT_EQ(dec.status().code(), ErrorCode::kMalformed);
    }
  }
  std::vector<Placement> p;
  EXPECT_EQ(apply_changes("xyz", p).code(), ErrorCode::kMalformed);
}

}  // namespace
}  // namespace strata::mpi
