// Perplexity: the scoring arithmetic against direct computations, and the chunked evaluation
// on a real model (plausible value, thread- and batch-independent, same as a plain re-derivation).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "devices/host_device.h"
#include "engine/perplexity.h"
#include "engine/session.h"
#include "model/model.h"

namespace strata::engine {
namespace {

// ---- the arithmetic ----

TEST(LogSoftmax, MatchesTheDefinition) {
  const std::vector<float> logits = {1.0f, 2.0f, 3.0f, -4.0f};
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0) + std::exp(-4.0);
  for (int32_t t = 0; t < 4; ++t) {
    EXPECT_NEAR(log_softmax(logits, t), logits[static_cast<size_t>(t)] - std::log(z), 1e-6)
        << "target " << t;
  }
}

TEST(LogSoftmax, IsStableForLargeLogits) {
  const std::vector<float> small = {1.0f, 2.0f, 3.0f};
  const std::vector<float> large = {1001.0f, 1002.0f, 1003.0f};
  const double v = log_softmax(large, 0);
  EXPECT_TRUE(std::isfinite(v));
  EXPECT_NEAR(v, log_softmax(small, 0), 1e-6);
}

TEST(NllStats, PplAndErrorMatchADirectComputation) {
  NllStats s;
  EXPECT_EQ(s.ppl(), 1.0);
  EXPECT_EQ(s.ppl_error(), 0.0);
  for (double v : {1.0, 2.0, 4.0}) s.add(v);
  EXPECT_EQ(s.count(), 3);
  const double mean = 7.0 / 3.0;
  // Sample variance of {1, 2, 4} is 7/3; the standard error of the mean is sqrt(7/9).
  EXPECT_NEAR(s.mean(), mean, 1e-15);
  EXPECT_NEAR(s.ppl(), std::exp(mean), 1e-12);
  EXPECT_NEAR(s.ppl_error(), std::sqrt(7.0 / 9.0) * std::exp(mean), 1e-12);
}

TEST(NllStats, AccumulatedLogSoftmaxEqualsDirectPerplexity) {
  std::mt19937 rng(7);
  std::normal_distribution<float> logit(0.0f, 3.0f);
  constexpr int kVocab = 50;
  constexpr int kRows = 40;
  NllStats s;
  long double direct = 0.0L;
  for (int r = 0; r < kRows; ++r) {
    std::vector<float> row(kVocab);
    for (float& l : row) l = logit(rng);
    const int32_t target = static_cast<int32_t>(rng() % kVocab);
    s.add(-log_softmax(row, target));
    long double z = 0.0L;
    for (float l : row) z += std::exp(static_cast<long double>(l));
    direct += -std::log(std::exp(static_cast<long double>(row[static_cast<size_t>(target)])) / z);
  }
  const double expected = static_cast<double>(std::exp(direct / kRows));
  EXPECT_NEAR(s.ppl(), expected, 1e-6 * expected);
}

// ---- on stories260K ----

const std::string kStories = std::string(STRATA_SHARED_DIR) + "/models/stories260K.gguf";

// TinyStories-like text: the same few sentence shapes over small word lists, seeded.
std::string make_stories(int n_stories, uint32_t seed) {
  const std::vector<std::string> girls = {"Lily", "Sue", "Mia", "Anna", "Lucy"};
  const std::vector<std::string> boys = {"Tom", "Ben", "Tim", "Max", "Jack"};
  const std::vector<std::string> things = {"ball", "toy", "kite", "doll", "car", "box"};
  const std::vector<std::string> animals = {"dog", "cat", "bird", "frog", "bunny"};
  const std::vector<std::string> adjs = {"big", "little", "red", "pretty", "shiny", "small"};
  const std::vector<std::string> places = {"in the park", "in the garden", "at home",
                                           "by the tree"};
  const std::vector<std::string> feelings = {"happy", "sad", "scared", "excited"};
  std::mt19937 rng(seed);
  const auto pick = [&rng](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
  std::string text;
  for (int i = 0; i < n_stories; ++i) {
    const bool girl = rng() % 2 == 0;
    const std::string name = pick(girl ? girls : boys);
    const std::string friend_name = pick(girl ? boys : girls);
    const std::string he = girl ? "She" : "He";
    const std::string his = girl ? "her" : "his";
    const std::string thing = pick(things);
    const std::string animal = pick(animals);
    text += "Once upon a time, there was a " + pick(adjs) + (girl ? " girl" : " boy") + " named " +
            name + ". " + he + " liked to play with " + his + " " + pick(adjs) + " " + thing + " " +
            pick(places) + ". One day, " + name + " saw a " + pick(adjs) + " " + animal + ". The " +
            animal + " was " + pick(feelings) + ". " + name + " said, \"Do " +
            "you want to play with me?\" The " + animal + " was very happy. They played together " +
            "all day. Then " + friend_name + " came to play too. " + name + " and " + friend_name +
            " were best friends. The end.\n";
  }
  return text;
}

class PerplexityModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kStories)) GTEST_SKIP() << kStories << " not found";
    auto m = model::Model::load(kStories, devices::host_device().buffer_type());
    ASSERT_TRUE(m.ok()) << m.status().message();
    model_ = std::move(m).value();
    tokens_ = model_->tokenizer().encode(make_stories(40, 1), /*add_special=*/true);
  }

  std::unique_ptr<Session> session(int threads, int64_t n_batch = 128) {
    auto s = Session::create(*model_, devices::host_device(),
                             {.n_ctx = 128, .n_batch = n_batch, .n_threads = threads});
    EXPECT_TRUE(s.ok()) << s.status().message();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  Result<PerplexityResult> run(int threads, int64_t n_batch = 128) {
    auto s = session(threads, n_batch);
    if (s == nullptr) return error(ErrorCode::kInternal, "no session");
    return compute_perplexity(*s, tokens_, {.n_ctx = 128, .n_batch = n_batch});
  }

  std::unique_ptr<model::Model> model_;
  std::vector<int32_t> tokens_;
};

TEST_F(PerplexityModelTest, IsPlausibleOnSimpleStories) {
  ASSERT_GE(tokens_.size(), 2000u);
  auto r = run(2);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const int64_t n_chunks = static_cast<int64_t>(tokens_.size()) / 128;
  EXPECT_EQ(r->n_chunks, n_chunks);
  EXPECT_EQ(static_cast<int64_t>(r->chunk_ppl.size()), n_chunks);
  EXPECT_EQ(r->n_scored, n_chunks * 63);  // positions 64..126 of each chunk
  EXPECT_TRUE(std::isfinite(r->ppl));
  EXPECT_GT(r->ppl, 1.0);
  // A uniform guess over the 512-token vocabulary scores 512; the model knows these stories.
  EXPECT_LT(r->ppl, 10.0) << "ppl " << r->ppl;
  EXPECT_GT(r->ppl_error, 0.0);
  EXPECT_LT(r->ppl_error, 0.2 * r->ppl);
  EXPECT_EQ(r->chunk_ppl.back(), r->ppl);
}

TEST_F(PerplexityModelTest, IsBitExactAcrossThreadsAndBatches) {
  auto one = run(1);
  auto two = run(2);
  auto split = run(2, 32);  // four decode calls per chunk
  ASSERT_TRUE(one.ok() && two.ok() && split.ok());
  EXPECT_EQ(one->ppl, two->ppl);
  EXPECT_EQ(one->ppl_error, two->ppl_error);
  EXPECT_EQ(one->chunk_ppl, two->chunk_ppl);
  EXPECT_EQ(one->ppl, split->ppl);
  EXPECT_EQ(one->chunk_ppl, split->chunk_ppl);
}

// Re-derives the estimate the plain way: every chunk in one decode with its first token
// replaced by BOS, the second half scored with a long-double softmax.
TEST_F(PerplexityModelTest, EqualsAPlainReDerivation) {
  auto s = session(2);
  ASSERT_NE(s, nullptr);
  const size_t n_ctx = 128;
  const int32_t bos = model_->tokenizer().bos_id();
  long double sum = 0.0L;
  int64_t count = 0;
  for (size_t start = 0; start + n_ctx <= tokens_.size(); start += n_ctx) {
    std::vector<int32_t> chunk(tokens_.begin() + static_cast<std::ptrdiff_t>(start),
                               tokens_.begin() + static_cast<std::ptrdiff_t>(start + n_ctx));
    chunk[0] = bos;
    s->reset();
    ASSERT_TRUE(s->decode(chunk, true).ok());
    for (size_t i = n_ctx / 2; i + 1 < n_ctx; ++i) {
      const auto row = s->logits(static_cast<int64_t>(i));
      long double z = 0.0L;
      for (float l : row) z += std::exp(static_cast<long double>(l));
      sum -= std::log(
          std::exp(static_cast<long double>(row[static_cast<size_t>(tokens_[start + i + 1])])) / z);
      ++count;
    }
  }
  const double expected = static_cast<double>(std::exp(sum / count));
  auto r = compute_perplexity(*s, tokens_, {.n_ctx = 128});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->n_scored, count);
  EXPECT_NEAR(r->ppl, expected, 1e-6 * expected);
}

TEST_F(PerplexityModelTest, TooShortTextIsAnError) {
  auto s = session(1);
  ASSERT_NE(s, nullptr);
  const std::vector<int32_t> few(tokens_.begin(), tokens_.begin() + 255);
  auto r = compute_perplexity(*s, few, {.n_ctx = 128});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kOutOfRange);
  EXPECT_NE(r.status().message().find("need at least 256 tokens"), std::string::npos)
      << r.status().message();
}

TEST_F(PerplexityModelTest, ChunksLargerThanTheContextAreAnError) {
  auto s = session(1);
  ASSERT_NE(s, nullptr);
  auto r = compute_perplexity(*s, tokens_, {.n_ctx = 256});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata::engine
