// Every device layout must give the same logits as the plain single-device run: the same
// kernels run in the same order on every device, so equality is bit-exact.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "decode_all.h"
#include "devices/host_device.h"
#include "devices/registry.h"
#include "engine/generate.h"
#include "engine/layout.h"
#include "engine/session.h"
#include "golden.h"
#include "model/model.h"

namespace strata::engine {
namespace {

struct LayoutCase {
  const char* name;
  int partitions;
  int64_t ngl;
  std::vector<float> split;
  bool kv_offload;
};

struct Opened {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<Session> session;
};

Opened open(const std::string& path, const LayoutCase& c, int64_t ubatch = 512,
            bool pipeline = true) {
  Opened r;
  LayoutParams lp;
  if (c.partitions > 0) {
    auto parts = devices::make_partitions(c.partitions, 0);
    EXPECT_TRUE(parts.ok()) << parts.status().message();
    if (!parts.ok()) return r;
    lp.devices = *parts;
  }
  lp.n_gpu_layers = c.ngl;
  lp.tensor_split = c.split;
  lp.kv_offload = c.kv_offload;
  auto probe = model::Model::load(path, devices::host_device().buffer_type());
  EXPECT_TRUE(probe.ok());
  if (!probe.ok()) return r;
  auto layout = make_layout((*probe)->hparams().n_layer, lp);
  EXPECT_TRUE(layout.ok()) << layout.status().message();
  auto m = model::Model::load(path, weight_placement(*layout, devices::host_device()));
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return r;
  r.model = std::move(m).value();
  auto s =
      Session::create(*r.model, devices::host_device(), *layout,
                      {.n_ctx = 256, .n_ubatch = ubatch, .n_threads = 2, .pipeline = pipeline});
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (s.ok()) r.session = std::move(s).value();
  return r;
}

std::vector<float> logits_of(Session& s, const std::vector<int32_t>& tokens) {
  return testing::decode_all(s, tokens);
}

const LayoutCase kLayouts[] = {
    {"ngl0_1part", 1, 0, {}, true},
    {"partial_1part", 1, 2, {}, true},
    {"full_1part", 1, 99, {}, true},
    {"full_2parts", 2, 99, {}, true},
    {"partial_2parts", 2, 3, {}, true},
    {"uneven_3to1", 2, 99, {3, 1}, true},
    {"uneven_1to3", 2, 99, {1, 3}, true},
    {"no_kv_offload", 2, 99, {}, false},
    {"partial_no_kv_offload", 2, 2, {}, false},
    {"full_3parts", 3, 99, {}, true},
    {"uneven_3parts", 3, 3, {2, 1, 1}, true},
};

class Layouts : public ::testing::TestWithParam<std::tuple<std::string, LayoutCase>> {};

TEST_P(Layouts, LogitsEqualThePlainRunBitForBit) {
  const auto& [model_name, layout] = GetParam();
  auto g = testing::load_golden(model_name, "park");
  if (!g) GTEST_SKIP() << "golden files not found";
  Opened plain = open(g->model_path, {"plain", 0, 0, {}, true});
  Opened laid = open(g->model_path, layout);
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
                                            ::testing::ValuesIn(kLayouts)),
                         [](const auto& param_info) {
                           std::string n = std::get<0>(param_info.param) + "_" +
                                           std::get<1>(param_info.param).name;
                           for (char& c : n)
                             c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return n;
                         });

// Micro-batches queued back to back (pipelined across the partitions) or one at a time give
// the plain run's logits.
TEST(Layouts, PipelinedMicroBatchesEqualThePlainRun) {
  auto g = testing::load_golden("synth256-q8_0", "park");
  if (!g) GTEST_SKIP() << "golden files not found";
  Opened plain = open(g->model_path, {"plain", 0, 0, {}, true}, 16);
  const auto expected = logits_of(*plain.session, g->prompt_tokens);
  for (bool pipeline : {true, false}) {
    for (const LayoutCase& c :
         {LayoutCase{"two", 2, 99, {}, true}, LayoutCase{"part", 2, 3, {1, 1}, false}}) {
      Opened laid = open(g->model_path, c, 16, pipeline);
      ASSERT_TRUE(laid.session);
      EXPECT_EQ(logits_of(*laid.session, g->prompt_tokens), expected)
          << c.name << " pipeline " << pipeline;
    }
  }
}

TEST(Layouts, GreedyContinuationIsTokenExactAcrossDevices) {
  auto g = testing::load_golden("stories260K", "once");
  if (!g) GTEST_SKIP() << "golden files not found";
  Opened r = open(g->model_path, {"uneven", 2, 99, {3, 1}, true});
  ASSERT_TRUE(r.session);
  GenerateParams gp;
  gp.prompt = g->prompt;
  gp.n_predict = static_cast<int32_t>(g->greedy_tokens.size());
  gp.sampling.temperature = 0.0f;
  auto stats = generate(*r.session, gp, [](std::string_view) { return Status{}; });
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  EXPECT_EQ(stats->tokens, g->greedy_tokens);
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
