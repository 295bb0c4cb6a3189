#include "case_runner.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "core/context.h"
#include "core/graph.h"
#include "cpu/graph_compute.h"
#include "cpu/reference/reference.h"
#include "test_util.h"

namespace strata::cpu::test {
namespace {

ThreadPool& pool(int n) {
  static std::map<int, std::unique_ptr<ThreadPool>> pools;
  auto& p = pools[n];
  if (!p) p = std::make_unique<ThreadPool>(n);
  return *p;
}

}  // namespace

CaseOutputs run_case(const Case& c, int n_threads, uint64_t seed) {
  core::Context ctx;
  Inputs in;
  const std::vector<core::Tensor*> outs = c.build(ctx, in);
  if (!ctx.ok()) {
    ADD_FAILURE() << "building " << c.name << ": " << ctx.status().message();
    return {};
  }
  const core::Graph g = core::build_graph(outs);
  Placement placement(g);
  fill_leafs(g, in, seed);
  std::vector<uint8_t> scratch;
  const Status s =
      n_threads == 0 ? reference::compute_graph(g) : compute_graph(g, pool(n_threads), scratch);
  EXPECT_TRUE(s.ok()) << s.message();
  CaseOutputs o;
  for (const core::Tensor* t : outs) {
    o.values.push_back(read_floats(*t));
    o.bytes.push_back(read_bytes(*t));
  }
  return o;
}

}  // namespace strata::cpu::test
