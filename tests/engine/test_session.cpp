// Session behaviour: micro-batching and threading do not change results; errors leave the
// session usable.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "decode_all.h"
#include "devices/host_device.h"
#include "engine/session.h"
#include "golden.h"
#include "model/model.h"

namespace strata::engine {
namespace {

class SessionTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto g = testing::load_golden(GetParam(), "park");
    if (!g) GTEST_SKIP() << "golden files not found";
    tokens_ = g->prompt_tokens;
    auto m = model::Model::load(g->model_path, devices::host_device().buffer_type());
    ASSERT_TRUE(m.ok()) << m.status().message();
    model_ = std::move(m).value();
  }

  std::vector<float> run(SessionParams sp) {
    auto s = Session::create(*model_, devices::host_device(), sp);
    EXPECT_TRUE(s.ok()) << s.status().message();
    if (!s.ok()) return {};
    return testing::decode_all(**s, tokens_);
  }

  std::unique_ptr<model::Model> model_;
  std::vector<int32_t> tokens_;
};

// Splitting the prompt into micro-batches (and batches) must not change any logit: each output
// element is computed by the same kernels in the same order, and masked cache cells contribute
// exact zeros, so the results are bit-identical.
TEST_P(SessionTest, MicroBatchingIsBitExact) {
  const auto whole = run({.n_ctx = 256, .n_batch = 512, .n_ubatch = 512});
  ASSERT_EQ(whole.size(), tokens_.size() * static_cast<size_t>(model_->hparams().n_vocab));
  for (int64_t ub : {1, 7, 64}) {
    EXPECT_EQ(run({.n_ctx = 256, .n_batch = 512, .n_ubatch = ub}), whole) << "ubatch " << ub;
  }
  EXPECT_EQ(run({.n_ctx = 256, .n_batch = 50, .n_ubatch = 16}), whole) << "batch 50";
}

// Threads split rows, never a sum, so thread count cannot change a bit.
TEST_P(SessionTest, ThreadCountIsBitExact) {
  const auto one = run({.n_ctx = 256, .n_ubatch = 32, .n_threads = 1});
  EXPECT_EQ(run({.n_ctx = 256, .n_ubatch = 32, .n_threads = 2}), one);
  EXPECT_EQ(run({.n_ctx = 256, .n_ubatch = 32, .n_threads = 3}), one);
}

INSTANTIATE_TEST_SUITE_P(Models, SessionTest,
                         ::testing::Values("stories260K", "synth256-q8_0", "synth256-q4_0",
                                           "synth256-f16", "synth256-bf16"));

TEST(SessionErrors, ContextOverflowIsAnErrorAndTheSessionStaysUsable) {
  auto m = model::Model::load(testing::model_path("stories260K.gguf"),
                              devices::host_device().buffer_type());
  if (!m.ok()) GTEST_SKIP() << m.status().message();
  auto s = Session::create(**m, devices::host_device(), {.n_ctx = 16});
  ASSERT_TRUE(s.ok()) << s.status().message();
  std::vector<int32_t> ten(10, 300);
  ASSERT_TRUE((*s)->decode(ten).ok());
  Status st = (*s)->decode(ten);
  EXPECT_EQ(st.code(), ErrorCode::kOutOfRange);
  EXPECT_NE(st.message().find("context"), std::string::npos) << st.message();
  EXPECT_EQ((*s)->n_past(), 10);
  // Still usable: the next token decodes as if the failed call never happened.
  std::vector<int32_t> one = {300};
  ASSERT_TRUE((*s)->decode(one).ok());
  EXPECT_EQ((*s)->n_past(), 11);

  EXPECT_EQ((*s)->decode(std::vector<int32_t>{9999}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ((*s)->n_past(), 11);
}

TEST(SessionErrors, UnknownArchitectureAndMissingFileAreClearErrors) {
  auto missing =
      model::Model::load("/nonexistent/model.gguf", devices::host_device().buffer_type());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/model.gguf"), std::string::npos);
  const std::string vocab = std::string(STRATA_SHARED_DIR) + "/vocab/ggml-vocab-gpt-2.gguf";
  if (!std::filesystem::exists(vocab)) GTEST_SKIP() << vocab << " not found";
  auto gpt2 = model::Model::load(vocab, devices::host_device().buffer_type());
  ASSERT_FALSE(gpt2.ok());
  EXPECT_EQ(gpt2.status().code(), ErrorCode::kUnsupported) << gpt2.status().message();
  EXPECT_NE(gpt2.status().message().find("architecture"), std::string::npos)
      << gpt2.status().message();
}

}  // namespace
}  // namespace strata::engine
