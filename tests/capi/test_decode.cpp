// The C API against the C++ engine: the same tokens, the same logits bit for bit, and
// capacity limits reported as codes.
#include <gtest/gtest.h>

#include <algorithm>

#include <span>
#include <string>
#include <vector>

#include "capi_test_util.h"
#include "devices/host_device.h"
#include "engine/session.h"
#include "model/model.h"

namespace strata::capi::testing {
namespace {

std::vector<int32_t> tokenize(strata_model* m, const std::string& text, bool add_bos) {
  size_t n = 0;
  EXPECT_EQ(strata_tokenize(m, text.data(), text.size(), add_bos, false, nullptr, 0, &n),
            text.empty() && !add_bos ? STRATA_OK : STRATA_ERR_BUFFER_TOO_SMALL);
  std::vector<int32_t> out(n);
  EXPECT_EQ(
      strata_tokenize(m, text.data(), text.size(), add_bos, false, out.data(), out.size(), &n),
      STRATA_OK)
      << strata_last_error();
  return out;
}

std::string detokenize(strata_model* m, const std::vector<int32_t>& tokens) {
  size_t n = 0;
  std::vector<char> buf(1);
  if (strata_detokenize(m, tokens.data(), tokens.size(), true, false, buf.data(), buf.size(), &n) ==
      STRATA_ERR_BUFFER_TOO_SMALL) {
    buf.resize(n + 1);
    EXPECT_EQ(
        strata_detokenize(m, tokens.data(), tokens.size(), true, false, buf.data(), buf.size(), &n),
        STRATA_OK);
  }
  return std::string(buf.data(), n);
}

TEST(CapiText, TokenizeRoundTrips) {
  ModelPtr m = open_stories();
  ASSERT_NE(m, nullptr) << strata_last_error();
  for (const std::string text :
       {"Once upon a time, there was a little girl.", "Hello  world", "a\nb", ""}) {
    const std::vector<int32_t> ids = tokenize(m.get(), text, false);
    EXPECT_EQ(detokenize(m.get(), ids), text);
  }
  const std::vector<int32_t> with_bos = tokenize(m.get(), "Once", true);
  ASSERT_FALSE(with_bos.empty());
  EXPECT_EQ(with_bos[0], strata_token_bos(m.get()));
  EXPECT_GE(strata_token_eos(m.get()), 0);
  EXPECT_TRUE(strata_token_is_eog(m.get(), strata_token_eos(m.get())));
  EXPECT_FALSE(strata_token_is_eog(m.get(), with_bos.back()));
  EXPECT_EQ(strata_model_n_vocab(m.get()), 512);
}

// The C API opens and runs the model through the engine, so its logits are the C++ Session's.
TEST(CapiDecode, LogitsMatchTheSessionBitForBit) {
  ModelPtr m = open_stories();
  ASSERT_NE(m, nullptr) << strata_last_error();
  ContextPtr c = make_context(m.get(), 64);
  ASSERT_NE(c, nullptr) << strata_last_error();
  const std::vector<int32_t> tokens = tokenize(m.get(), "Once upon a time, there was", true);
  ASSERT_EQ(strata_decode(c.get(), tokens.data(), tokens.size(), true), STRATA_OK)
      << strata_last_error();
  EXPECT_EQ(strata_context_n_past(c.get()), static_cast<int64_t>(tokens.size()));
  EXPECT_EQ(strata_context_n_outputs(c.get()), static_cast<int64_t>(tokens.size()));

  auto model = model::Model::load(stories_path(), devices::host_device().buffer_type());
  ASSERT_TRUE(model.ok()) << model.status().message();
  auto session =
      engine::Session::create(**model, devices::host_device(), {.n_ctx = 64, .n_threads = 1});
  ASSERT_TRUE(session.ok()) << session.status().message();
  ASSERT_TRUE((*session)->decode(tokens, true).ok());

  for (int64_t i = 0; i < static_cast<int64_t>(tokens.size()); ++i) {
    const float* logits = nullptr;
    int32_t n_vocab = 0;
    ASSERT_EQ(strata_get_logits(c.get(), i, &logits, &n_vocab), STRATA_OK);
    const std::span<const float> want = (*session)->logits(i);
    ASSERT_EQ(static_cast<size_t>(n_vocab), want.size());
    EXPECT_EQ(std::vector<float>(logits, logits + n_vocab),
              std::vector<float>(want.begin(), want.end()))
        << "row " << i;
  }
  const float* last = nullptr;
  ASSERT_EQ(strata_get_logits(c.get(), -1, &last, nullptr), STRATA_OK);
  const float* row = nullptr;
  ASSERT_EQ(strata_get_logits(c.get(), static_cast<int64_t>(tokens.size()) - 1, &row, nullptr),
            STRATA_OK);
  EXPECT_EQ(last, row);
  EXPECT_EQ(strata_get_logits(c.get(), static_cast<int64_t>(tokens.size()), &row, nullptr),
            STRATA_ERR_OUT_OF_RANGE);

  // One more token after the prompt, only its logits kept.
  const int32_t next = tokens[1];
  ASSERT_EQ(strata_decode(c.get(), &next, 1, false), STRATA_OK);
  ASSERT_TRUE((*session)->decode(std::span(&next, 1)).ok());
  ASSERT_EQ(strata_get_logits(c.get(), -1, &last, nullptr), STRATA_OK);
  const std::span<const float> want = (*session)->logits();
  EXPECT_EQ(std::vector<float>(last, last + want.size()),
            std::vector<float>(want.begin(), want.end()));
  EXPECT_EQ(strata_get_logits(c.get(), 1, &row, nullptr), STRATA_ERR_OUT_OF_RANGE);
}

// The last prompt logits of each model, in order (empty on a failure, which is reported).
std::vector<std::vector<float>> prompt_logits(std::initializer_list<strata_model*> models,
                                              const char* prompt) {
  std::vector<std::vector<float>> results;
  for (strata_model* m : models) {
    const std::vector<int32_t> tokens = tokenize(m, prompt, true);
    ContextPtr c = make_context(m, 32);
    EXPECT_NE(c, nullptr) << strata_last_error();
    if (c == nullptr) return {};
    EXPECT_EQ(strata_decode(c.get(), tokens.data(), tokens.size(), false), STRATA_OK)
        << strata_last_error();
    const float* logits = nullptr;
    int32_t n = 0;
    if (strata_get_logits(c.get(), -1, &logits, &n) != STRATA_OK) return {};
    results.emplace_back(logits, logits + n);
  }
  return results;
}

// Partition devices with a layer split: the same logits as the host alone.
TEST(CapiDecode, LayoutParamsGiveTheSameLogits) {
  strata_model_params p;
  strata_model_params_init(&p);
  p.n_partitions = 2;
  p.n_gpu_layers = 99;
  const float split[2] = {3.0f, 1.0f};
  p.tensor_split = split;
  p.n_tensor_split = 2;
  ModelPtr split_model = open_stories(&p);
  ASSERT_NE(split_model, nullptr) << strata_last_error();
  ModelPtr host_model = open_stories();
  ASSERT_NE(host_model, nullptr) << strata_last_error();
  const std::vector<std::vector<float>> results =
      prompt_logits({split_model.get(), host_model.get()}, "Once upon a time");
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0], results[1]);
}

// A memory budget smaller than the weights: they stream from the file, same logits.
TEST(CapiDecode, MemoryBudgetStreamsTheWeightsWithTheSameLogits) {
  strata_model_params p;
  strata_model_params_init(&p);
  p.mem_budget_bytes = 900 * 1024;
  ModelPtr budgeted = open_stories(&p);
  ASSERT_NE(budgeted, nullptr) << strata_last_error();
  ModelPtr host_model = open_stories();
  ASSERT_NE(host_model, nullptr) << strata_last_error();
  const std::vector<std::vector<float>> results =
      prompt_logits({budgeted.get(), host_model.get()}, "Once upon a time");
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0], results[1]);
  // Without streaming the same budget cannot hold the model (the same partition: free it first).
  budgeted.reset();
  p.mem_budget_bytes = 0;
  p.n_partitions = 1;
  p.n_gpu_layers = 99;
  p.device_mem_bytes = 900 * 1024;
  strata_model* m = nullptr;
  EXPECT_EQ(strata_model_open(stories_path().c_str(), &p, &m), STRATA_ERR_OUT_OF_MEMORY);
  p.stream_weights = true;
  ModelPtr streamed = open_stories(&p);
  EXPECT_NE(streamed, nullptr) << strata_last_error();
}

// A tensor split over two partitions: the host's greedy choice, logits within float rounding.
TEST(CapiDecode, TensorSplitGivesThePlainLogits) {
  strata_model_params p;
  strata_model_params_init(&p);
  p.n_partitions = 2;
  p.n_gpu_layers = 99;
  p.split_mode = STRATA_SPLIT_TENSOR;
  ModelPtr split_model = open_stories(&p);
  ASSERT_NE(split_model, nullptr) << strata_last_error();
  ModelPtr host_model = open_stories();
  ASSERT_NE(host_model, nullptr) << strata_last_error();
  const std::vector<std::vector<float>> results =
      prompt_logits({split_model.get(), host_model.get()}, "Once upon a time");
  ASSERT_EQ(results.size(), 2u);
  ASSERT_EQ(results[0].size(), results[1].size());
  for (size_t i = 0; i < results[0].size(); ++i) {
    EXPECT_NEAR(results[0][i], results[1][i], 1e-3f) << "logit " << i;
  }
  EXPECT_EQ(std::max_element(results[0].begin(), results[0].end()) - results[0].begin(),
            std::max_element(results[1].begin(), results[1].end()) - results[1].begin());
}

TEST(CapiDecode, ContextOverflowIsOutOfRange) {
  ModelPtr m = open_stories();
  ASSERT_NE(m, nullptr) << strata_last_error();
  ContextPtr c = make_context(m.get(), 8);
  ASSERT_NE(c, nullptr) << strata_last_error();
  EXPECT_EQ(strata_context_n_ctx(c.get()), 8);
  const std::vector<int32_t> nine(9, 1);
  EXPECT_EQ(strata_decode(c.get(), nine.data(), nine.size(), false), STRATA_ERR_OUT_OF_RANGE);
  EXPECT_NE(std::string(strata_last_error()).find("context overflow"), std::string::npos);
  EXPECT_EQ(strata_context_n_past(c.get()), 0);
  ASSERT_EQ(strata_decode(c.get(), nine.data(), 8, false), STRATA_OK) << strata_last_error();
  EXPECT_EQ(strata_decode(c.get(), nine.data(), 1, false), STRATA_ERR_OUT_OF_RANGE);
  EXPECT_EQ(strata_context_n_past(c.get()), 8);
  // The logits of the last good decode survive the failed one.
  const float* logits = nullptr;
  EXPECT_EQ(strata_get_logits(c.get(), -1, &logits, nullptr), STRATA_OK);
  ASSERT_EQ(strata_context_reset(c.get()), STRATA_OK);
  EXPECT_EQ(strata_context_n_past(c.get()), 0);
  EXPECT_EQ(strata_get_logits(c.get(), -1, &logits, nullptr), STRATA_ERR_OUT_OF_RANGE);
  EXPECT_EQ(strata_decode(c.get(), nine.data(), 4, false), STRATA_OK);
}

TEST(CapiDecode, BadTokensAndBatches) {
  ModelPtr m = open_stories();
  ASSERT_NE(m, nullptr) << strata_last_error();
  strata_context_params p;
  strata_context_params_init(&p);
  p.n_ctx = 64;
  p.n_batch = 4;
  strata_context* raw = nullptr;
  ASSERT_EQ(strata_context_create(m.get(), &p, &raw), STRATA_OK) << strata_last_error();
  ContextPtr c(raw);
  const int32_t bad[2] = {1, 512};
  EXPECT_EQ(strata_decode(c.get(), bad, 2, false), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(strata_decode(c.get(), bad, 0, false), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(strata_decode(c.get(), nullptr, 1, false), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(strata_context_n_past(c.get()), 0);
  const std::vector<int32_t> ten(10, 1);
  EXPECT_EQ(strata_decode(c.get(), ten.data(), ten.size(), true), STRATA_ERR_INVALID_ARGUMENT);
  // Without all_logits a long input is split into n_batch pieces.
  EXPECT_EQ(strata_decode(c.get(), ten.data(), ten.size(), false), STRATA_OK);
  EXPECT_EQ(strata_context_n_past(c.get()), 10);
  EXPECT_EQ(strata_context_n_outputs(c.get()), 1);
}

TEST(CapiSample, GreedyPicksTheArgmax) {
  ModelPtr m = open_stories();
  ASSERT_NE(m, nullptr) << strata_last_error();
  ContextPtr c = make_context(m.get(), 32);
  ASSERT_NE(c, nullptr) << strata_last_error();
  strata_sampler_params sp;
  strata_sampler_params_init(&sp);
  sp.temperature = 0.0f;
  strata_sampler* raw = nullptr;
  ASSERT_EQ(strata_sampler_create(&sp, &raw), STRATA_OK);
  SamplerPtr s(raw);
  int32_t token = -1;
  EXPECT_EQ(strata_sample(s.get(), c.get(), -1, &token), STRATA_ERR_OUT_OF_RANGE)
      << "no logits before the first decode";
  const std::vector<int32_t> tokens = tokenize(m.get(), "Once upon a time", true);
  ASSERT_EQ(strata_decode(c.get(), tokens.data(), tokens.size(), false), STRATA_OK);
  ASSERT_EQ(strata_sample(s.get(), c.get(), -1, &token), STRATA_OK);
  const float* logits = nullptr;
  int32_t n = 0;
  ASSERT_EQ(strata_get_logits(c.get(), -1, &logits, &n), STRATA_OK);
  int32_t best = 0;
  for (int32_t i = 1; i < n; ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  EXPECT_EQ(token, best);
  EXPECT_EQ(strata_sampler_accept(s.get(), token), STRATA_OK);
}

}  // namespace
}  // namespace strata::capi::testing
