// End-to-end checks against llama.cpp's outputs for the models in ../shared.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <span>

#include "devices/host_device.h"
#include "engine/generate.h"
#include "engine/session.h"
#include "golden.h"
#include "model/model.h"

namespace strata::engine {
namespace {

using testing::Golden;
using testing::load_golden;

struct Loaded {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<Session> session;
};

Loaded load(const std::string& path, SessionParams sp = {}) {
  Loaded l;
  auto m = model::Model::load(path, devices::host_device().buffer_type());
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return l;
  l.model = std::move(m).value();
  if (sp.n_ctx == 0) sp.n_ctx = 256;
  auto s = Session::create(*l.model, devices::host_device(), sp);
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (s.ok()) l.session = std::move(s).value();
  return l;
}

// Logits of every prompt position, [n_prompt][n_vocab].
std::vector<float> prompt_logits(Session& s, std::span<const int32_t> tokens) {
  s.reset();
  Status st = s.decode(tokens, /*all_logits=*/true);
  EXPECT_TRUE(st.ok()) << st.message();
  std::vector<float> out;
  for (int64_t i = 0; i < s.n_outputs(); ++i) {
    auto row = s.logits(i);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

double max_abs_diff(std::span<const float> a, std::span<const float> b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

double rms_diff(std::span<const float> a, std::span<const float> b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return std::sqrt(s / static_cast<double>(a.size()));
}

class GoldenF32 : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

// F32 weights: every prompt position within 1e-3 of llama.cpp (max abs).
TEST_P(GoldenF32, PromptLogitsMatchWithin1e3) {
  const auto& [name, prompt] = GetParam();
  auto g = load_golden(name, prompt);
  if (!g) GTEST_SKIP() << "golden files for " << name << " not found";
  Loaded l = load(g->model_path);
  ASSERT_TRUE(l.session);
  EXPECT_EQ(l.model->tokenizer().encode(g->prompt, true), g->prompt_tokens);
  auto logits = prompt_logits(*l.session, g->prompt_tokens);
  ASSERT_EQ(logits.size(), g->logits.size());
  EXPECT_LT(max_abs_diff(logits, g->logits), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Models, GoldenF32,
                         ::testing::Combine(::testing::Values("stories260K", "synth256-f32"),
                                            ::testing::Values("once", "park")));

// A trained F32 model must reproduce llama.cpp's greedy continuation token for token.
TEST(GoldenGreedy, Stories260KContinuationIsTokenExact) {
  for (const char* prompt : {"once", "park"}) {
    auto g = load_golden("stories260K", prompt);
    if (!g) GTEST_SKIP() << "golden files not found";
    Loaded l = load(g->model_path, {.n_ctx = 512});
    ASSERT_TRUE(l.session);
    GenerateParams gp;
    gp.prompt = g->prompt;
    gp.n_predict = static_cast<int32_t>(g->greedy_tokens.size());
    gp.sampling.temperature = 0.0f;
    auto stats = generate(*l.session, gp, [](std::string_view) {});
    ASSERT_TRUE(stats.ok()) << stats.status().message();
    EXPECT_EQ(stats->tokens, g->greedy_tokens) << prompt;
  }
}

// Quantized and half-precision files: the RMS difference from llama.cpp's run of the same
// file must be at most a tenth of that file's own RMS difference from the F32 run.
class GoldenTyped : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTyped, RmsWithinATenthOfQuantizationError) {
  const std::string name = GetParam();
  auto g = load_golden(name, "park");
  auto ref = load_golden("synth256-f32", "park");
  if (!g || !ref) GTEST_SKIP() << "golden files for " << name << " not found";
  Loaded l = load(g->model_path);
  ASSERT_TRUE(l.session);
  auto logits = prompt_logits(*l.session, g->prompt_tokens);
  ASSERT_EQ(logits.size(), g->logits.size());
  const double quant_error = rms_diff(g->logits, ref->logits);
  const double ours = rms_diff(logits, g->logits);
  RecordProperty("rms_vs_golden", std::to_string(ours));
  EXPECT_LT(ours, quant_error / 10) << "quantization error of the format: " << quant_error;
}

INSTANTIATE_TEST_SUITE_P(Types, GoldenTyped,
                         ::testing::Values("synth256-f16", "synth256-bf16", "synth256-q8_0",
                                           "synth256-q4_0"));

}  // namespace
}  // namespace strata::engine
