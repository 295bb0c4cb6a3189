// Every device layout must give the same logits as the plain single-device run: the same
// kernels run in the same order on every device, so equality is bit-exact.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "decode_all.h"
#include "devices/host_device.h"
#include "devices/registry.h"
#include "engine/layout.h"
#include "engine/session.h"
#include "golden.h"
#include "layout_cases.h"
#include "model/model.h"

namespace strata::engine {
namespace {

using testing::LayoutCase;

testing::Opened open(const std::string& path, const LayoutCase& c, int64_t ubatch = 512,
                     bool pipeline = true) {
  return testing::open_with_layout(path, c, {.ubatch = ubatch, .pipeline = pipeline});
}

std::vector<float> logits_of(Session& s, const std::vector<int32_t>& tokens) {
  return testing::decode_all(s, tokens);
}

class Layouts : public ::testing::TestWithParam<std::tuple<std::string, LayoutCase>> {};

TEST_P(Layouts, LogitsEqualThePlainRunBitForBit) {
  const auto& [model_name, layout] = GetParam();
  auto g = testing::load_golden(model_name, "park");
  if (!g) GTEST_SKIP() << "golden files not found";
  testing::Opened plain = open(g->model_path, {"plain", 0, 0, {}, true});
  testing::Opened laid = open(g->model_path, layout);
  ASSERT_TRUE(plain.session && laid.session);
  const auto expected = logits_of(*plain.session, g->prompt_tokens);
  EXPECT_EQ(logits_of(*laid.session, g->prompt_tokens), expected);
  // Decode steps too (one token at a time through every split).
  for (int32_t t : {261, 378, 403}) {
    const std::vector<int32_t> one = {t};
    EXPECT_EQ(logits_of(*laid.session, one), logits_of(*plain.session, one));
  }
}

INSTANTIATE_TEST_SUITE_P(All, Layouts,
                         ::testing::Combine(::testing::Values("stories260K", "synth256-q8_0"),
                                            ::testing::ValuesIn(testing::layout_cases())),
                         [](const auto& param_info) {
                           return testing::case_name(std::get<0>(param_info.param),
                                                     std::get<1>(param_info.param));
                         });

// Micro-batches queued back to back (pipelined across the partitions) or one at a time give
// the plain run's logits.
TEST(Layouts, PipelinedMicroBatchesEqualThePlainRun) {
  auto g = testing::load_golden("synth256-q8_0", "park");
  if (!g) GTEST_SKIP() << "golden files not found";
  testing::Opened plain = open(g->model_path, {"plain", 0, 0, {}, true}, 16);
  const auto expected = logits_of(*plain.session, g->prompt_tokens);
  for (bool pipeline : {true, false}) {
    for (const LayoutCase& c :
         {LayoutCase{"two", 2, 99, {}, true}, LayoutCase{"part", 2, 3, {1, 1}, false}}) {
      testing::Opened laid = open(g->model_path, c, 16, pipeline);
      ASSERT_TRUE(laid.session);
      EXPECT_EQ(logits_of(*laid.session, g->prompt_tokens), expected)
          << c.name << " pipeline " << pipeline;
    }
  }
}

TEST(Layouts, GreedyContinuationIsTokenExactAcrossDevices) {
  auto g = testing::load_golden("stories260K", "once");
  if (!g) GTEST_SKIP() << "golden files not found";
  testing::Opened r = open(g->model_path, {"uneven", 2, 99, {3, 1}, true});
  ASSERT_TRUE(r.session);
  EXPECT_EQ(testing::greedy_tokens(*r.session, g->prompt, g->greedy_tokens.size()),
            g->greedy_tokens);
}

TEST(Layouts, MakeLayoutSplitsTheLastLayersByProportion) {
  backend::Device* a = &devices::host_device();
  backend::Device* b = &devices::host_device();
  auto l = make_layout(8, {.devices = {a, b}, .n_gpu_layers = 6, .tensor_split = {3, 1}});
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->layer_device, (std::vector<int>{-1, -1, 0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(l->output_device, -1);
  auto all = make_layout(4, {.devices = {a, b}, .n_gpu_layers = 5});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->layer_device, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(all->output_device, 1);
  EXPECT_FALSE(make_layout(4, {.devices = {a, b}, .n_gpu_layers = 2, .tensor_split = {1}}).ok());
}

}  // namespace
}  // namespace strata::engine
