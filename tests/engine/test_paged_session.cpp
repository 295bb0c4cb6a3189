// `--paged` (every micro-batch cut after each layer, each cut signalling a timeline the
// session waits on) against the ordinary path: bit-identical logits for every model type and
// every device layout, token-exact greedy text, identical perplexity.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "decode_all.h"
#include "engine/perplexity.h"
#include "engine/session.h"
#include "golden.h"
#include "layout_cases.h"
#include "model/arch/graph.h"

namespace strata::engine {
namespace {

using testing::LayoutCase;

const std::vector<std::string> kModels = {"stories260K",   "synth256-f32",    "synth256-f16",
                                          "synth256-bf16", "synth256-q8_0",   "synth256-q4_0",
                                          "synth256-q4_k", "synth256-q4_k_m", "synth256-q6_k"};

std::vector<LayoutCase> plain_and_every_layout() {
  std::vector<LayoutCase> all = {testing::plain_layout()};
  for (const LayoutCase& c : testing::layout_cases()) all.push_back(c);
  return all;
}

class PagedSession : public ::testing::TestWithParam<std::tuple<std::string, LayoutCase>> {};

TEST_P(PagedSession, LogitsEqualTheOrdinaryPathBitForBit) {
  const auto& [model_name, layout] = GetParam();
  auto g = testing::load_golden(model_name, "park");
  if (!g) GTEST_SKIP() << "golden files not found";
  testing::Opened plain = testing::open_with_layout(g->model_path, testing::plain_layout());
  testing::Opened paged = testing::open_with_layout(g->model_path, layout, {.paged = true});
  ASSERT_TRUE(plain.session && paged.session);
  EXPECT_EQ(testing::decode_all(*paged.session, g->prompt_tokens),
            testing::decode_all(*plain.session, g->prompt_tokens));
  for (int32_t t : {261, 378, 403}) {
    const std::vector<int32_t> one = {t};
    EXPECT_EQ(testing::decode_all(*paged.session, one), testing::decode_all(*plain.session, one));
  }
  // Every layer boundary of every micro-batch signalled: one prompt run and three decodes.
  const auto n_layer = static_cast<uint64_t>(paged.model->hparams().n_layer);
  ASSERT_NE(paged.session->layer_fences(), nullptr);
  EXPECT_EQ(paged.session->layer_fences()->signals(), 4 * n_layer);
}

INSTANTIATE_TEST_SUITE_P(All, PagedSession,
                         ::testing::Combine(::testing::ValuesIn(kModels),
                                            ::testing::ValuesIn(plain_and_every_layout())),
                         [](const auto& param_info) {
                           return testing::case_name(std::get<0>(param_info.param),
                                                     std::get<1>(param_info.param));
                         });

TEST(PagedSessionText, GreedyContinuationIsTokenExact) {
  for (const char* prompt : {"once", "park"}) {
    auto g = testing::load_golden("stories260K", prompt);
    if (!g) GTEST_SKIP() << "golden files not found";
    for (const LayoutCase& c : {testing::plain_layout(), LayoutCase{"uneven", 2, 99, {3, 1}, true},
                                LayoutCase{"partial", 3, 3, {2, 1, 1}, false}}) {
      testing::Opened r = testing::open_with_layout(g->model_path, c, {.paged = true});
      ASSERT_TRUE(r.session);
      EXPECT_EQ(testing::greedy_tokens(*r.session, g->prompt, g->greedy_tokens.size()),
                g->greedy_tokens)
          << prompt << " " << c.name;
    }
  }
}

TEST(PagedSessionText, PerplexityIsIdentical) {
  auto g = testing::load_golden("synth256-q4_k_m", "park");
  if (!g) GTEST_SKIP() << "golden files not found";
  std::mt19937 rng(5);
  std::vector<int32_t> tokens(4 * 64);
  for (int32_t& t : tokens) t = static_cast<int32_t>(1 + rng() % 511);
  auto ppl = [&](const LayoutCase& c, bool paged) {
    testing::Opened r =
        testing::open_with_layout(g->model_path, c, {.ubatch = 16, .paged = paged, .n_ctx = 64});
    EXPECT_TRUE(r.session);
    auto res = compute_perplexity(*r.session, tokens, {.n_ctx = 64, .n_batch = 64});
    EXPECT_TRUE(res.ok()) << res.status().message();
    return res.ok() ? res->ppl : -1.0;
  };
  const double plain = ppl(testing::plain_layout(), false);
  EXPECT_EQ(ppl(testing::plain_layout(), true), plain);
  EXPECT_EQ(ppl({"two", 2, 99, {}, true}, true), plain);
}

// Stable identity: the model names every node it builds, whatever the attention path or the
// rows of logits wanted, so schedules and windows can be set by name.
TEST(StableNames, EveryNodeOfTheModelGraphHasAName) {
  auto g = testing::load_golden("stories260K", "once");
  if (!g) GTEST_SKIP() << "golden files not found";
  testing::Opened r = testing::open_with_layout(g->model_path, testing::plain_layout());
  ASSERT_TRUE(r.session);
  for (bool fa : {false, true}) {
    for (int64_t outputs : {1, 8}) {
      core::Context ctx;
      auto built = r.model->build_graph(ctx, r.session->cache().tensors(), {8, 32, outputs}, {fa});
      ASSERT_TRUE(ctx.ok());
      for (const core::Tensor* n : built.graph.nodes) {
        EXPECT_FALSE(n->name.empty());
        EXPECT_NE(n->name.rfind("node_", 0), 0u) << "positional name " << n->name;
      }
      EXPECT_EQ(built.graph.nodes.back()->name, "result_output");
    }
  }
}

// A session decoding token by token plans each graph shape once.
TEST(PlanCache, DecodingReusesPlans) {
  auto g = testing::load_golden("stories260K", "park");
  if (!g) GTEST_SKIP() << "golden files not found";
  testing::Opened r = testing::open_with_layout(g->model_path, {"two", 2, 99, {}, true});
  ASSERT_TRUE(r.session);
  for (int32_t t : g->prompt_tokens) {
    const std::vector<int32_t> one = {t};
    ASSERT_FALSE(testing::decode_all(*r.session, one).empty());
  }
  const auto& s = r.session->scheduler();
  // The cache view grows by 32 cells at a time: one plan per step of 32 cells.
  EXPECT_LE(s.plans_built(), 5u + 1u);
  EXPECT_EQ(s.plans_built() + s.plans_reused(), g->prompt_tokens.size());
}

}  // namespace
}  // namespace strata::engine
