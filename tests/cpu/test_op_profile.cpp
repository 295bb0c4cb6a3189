// The op profile behind `strata bench --profile`: nodes of every layer fold into one kind,
// every computed node is counted once per graph run, whatever the thread count, and nothing is
// recorded unless a profile is active.
#include "cpu/op_profile.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/context.h"
#include "core/graph.h"
#include "core/ops.h"
#include "cpu/graph_compute.h"
#include "test_util.h"

namespace strata::cpu {
namespace {

using core::Context;
using core::Tensor;
using core::Type;

// The report line of a kind, or "" when it has none.
std::string line_of(const std::string& report, const std::string& kind) {
  const size_t at = report.find("  " + kind + "\n");
  if (at == std::string::npos) return "";
  const size_t start = report.rfind('\n', at);
  return report.substr(start == std::string::npos ? 0 : start + 1, at + kind.size() + 2 - start);
}

TEST(OpProfile, CountsEachKindOfNodeOncePerRun) {
  for (const int threads : {1, 2, 3}) {
    Context ctx;
    test::Inputs in;
    Tensor* x = ctx.new_tensor(Type::kF32, {64, 4, 1, 1});
    Tensor* h = x;
    for (int layer = 0; layer < 3; ++layer) {
      Tensor* w = ctx.new_tensor(Type::kF16, {64, 64, 1, 1});
      Tensor* up = core::mul_mat(ctx, w, h);
      up->name = "blk." + std::to_string(layer) + ".ffn_up";
      h = core::add(ctx, up, h);
      h->name = "blk." + std::to_string(layer) + ".out";
    }
    ASSERT_TRUE(ctx.ok());
    const core::Graph g = core::build_graph(std::vector<Tensor*>{h});
    test::Placement placement(g);
    test::fill_leafs(g, in, 1);
    ThreadPool pool(threads);
    std::vector<uint8_t> scratch;

    ASSERT_TRUE(compute_graph(g, pool, scratch).ok());  // no profile active: nothing recorded
    OpProfile profile;
    EXPECT_EQ(profile.report(1, "run"), "");
    {
      const OpProfileScope scope(&profile);
      for (int run = 0; run < 2; ++run) ASSERT_TRUE(compute_graph(g, pool, scratch).ok());
    }
    EXPECT_EQ(active_op_profile(), nullptr);
    ASSERT_TRUE(compute_graph(g, pool, scratch).ok());  // after the scope: not recorded

    const std::string report = profile.report(2, "run");
    // Three layers a run: 3 calls per run of each kind; the two kinds hold every node.
    const std::string mm = line_of(report, "mul_mat blk.*.ffn_up f16");
    const std::string add = line_of(report, "add blk.*.out f32");
    EXPECT_NE(mm.find(" 3.0 "), std::string::npos) << report;
    EXPECT_NE(add.find(" 3.0 "), std::string::npos) << report;
    EXPECT_NE(report.find("ms/run"), std::string::npos) << report;
    EXPECT_NE(report.find("total"), std::string::npos) << report;
  }
}

}  // namespace
}  // namespace strata::cpu
