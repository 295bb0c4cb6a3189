// Continuous batching: requests that share a session through BatchLoop get exactly the tokens
// each gets alone, whenever they join; cancelled requests free their slots; bad requests are
// refused without touching the others.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "decode_all.h"
#include "engine/batch_loop.h"
#include "golden.h"
#include "layout_cases.h"

namespace strata::engine {
namespace {

const char* const kPrompts[] = {
    "Once upon a time",
    "Lily and Tom went to the park. They saw a big dog!",
    "The sun was hot and the little bird was thirsty",
    "Tim had a red ball. He liked to throw it high in the sky and catch it with both hands.",
    "One day, a little girl named Sue found a shiny stone",
    "The cat sat on the mat",
};

struct Result {
  std::vector<int32_t> tokens;
  FinishReason reason = FinishReason::kError;
  bool done = false;
};

Request greedy(const std::vector<int32_t>& prompt, int32_t max_tokens, Result& out) {
  Request r;
  r.prompt = prompt;
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0.0f;
  r.on_token = [&out](int32_t t) {
    out.tokens.push_back(t);
    return true;
  };
  r.on_done = [&out](FinishReason why, const Status&) {
    out.reason = why;
    out.done = true;
  };
  return r;
}

TEST(BatchLoop, ConcurrentGreedyRequestsGetWhatTheyGetAlone) {
  const std::string path = testing::model_path("stories260K.gguf");
  testing::Opened solo = testing::open_with_layout(path, testing::plain_layout(), {.n_ctx = 512});
  testing::Opened shared =
      testing::open_with_layout(path, testing::plain_layout(), {.ubatch = 32, .n_ctx = 1024});
  ASSERT_TRUE(solo.session && shared.session);
  constexpr int32_t kMax = 40;
  std::vector<std::vector<int32_t>> prompts, expected;
  for (const char* p : kPrompts) {
    prompts.push_back(solo.model->tokenizer().encode(p, true));
    solo.session->reset();
    expected.push_back(testing::greedy_tokens(*solo.session, p, kMax));
  }
  // Four slots, six requests: two wait, and join as the first ones finish; prompt chunks of
  // at most 8 tokens a step share the steps with the generating slots.
  auto loop = BatchLoop::create(*shared.session, {.n_slots = 4, .step_tokens = 8});
  ASSERT_TRUE(loop.ok()) << loop.status().message();
  std::vector<Result> results(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    // The shorter budgets make the first slots free up early.
    const int32_t max = i < 2 ? 10 : kMax;
    ASSERT_TRUE((*loop)->submit(greedy(prompts[i], max, results[i])).ok());
  }
  for (int steps = 0; !(*loop)->idle(); ++steps) {
    ASSERT_LT(steps, 1000);
    ASSERT_TRUE((*loop)->step().ok());
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_TRUE(results[i].done) << i;
    const size_t n = i < 2 ? 10 : kMax;
    std::vector<int32_t> want = expected[i];
    if (want.size() > n) want.resize(n);
    EXPECT_EQ(results[i].tokens, want) << "request " << i;
  }
}

TEST(BatchLoop, APromptThatExtendsACachedOneReusesIt) {
  const std::string path = testing::model_path("stories260K.gguf");
  testing::Opened o = testing::open_with_layout(path, testing::plain_layout(), {.n_ctx = 512});
  ASSERT_TRUE(o.session);
  const auto& tok = o.model->tokenizer();
  const auto first = tok.encode("Once upon a time, there was a little dog", true);
  const auto second = tok.encode("Once upon a time, there was a little dog who liked to run", true);
  size_t common = 0;
  while (common < first.size() && first[common] == second[common]) ++common;
  ASSERT_GT(common, 5u);
  // A step holds just the part of the second prompt past the common prefix: only a reused
  // prefix lets its first step finish the prompt and produce a token.
  const auto rest = static_cast<int64_t>(second.size() - common);
  auto loop = BatchLoop::create(*o.session, {.n_slots = 2, .step_tokens = rest});
  ASSERT_TRUE(loop.ok());
  Result a, b;
  ASSERT_TRUE((*loop)->submit(greedy(first, 4, a)).ok());
  while (!(*loop)->idle()) ASSERT_TRUE((*loop)->step().ok());
  // The prompt and the generated tokens but the last (never evaluated).
  EXPECT_EQ(o.session->cache().used(), static_cast<int64_t>(first.size()) + 3);
  ASSERT_TRUE((*loop)->submit(greedy(second, 4, b)).ok());
  ASSERT_TRUE((*loop)->step().ok());
  EXPECT_EQ(b.tokens.size(), 1u);
  EXPECT_EQ(o.session->cache().used(), static_cast<int64_t>(second.size()));
  while (!(*loop)->idle()) ASSERT_TRUE((*loop)->step().ok());
  o.session->reset();
  EXPECT_EQ(b.tokens, testing::greedy_tokens(*o.session,
                                             "Once upon a time, there was a little dog who "
                                             "liked to run",
                                             4));
}

TEST(BatchLoop, CancelFreesTheSlotAndBadRequestsAreRefused) {
  const std::string path = testing::model_path("stories260K.gguf");
  testing::Opened o = testing::open_with_layout(path, testing::plain_layout(), {.n_ctx = 256});
  ASSERT_TRUE(o.session);
  auto loop = BatchLoop::create(*o.session, {.n_slots = 2});
  ASSERT_TRUE(loop.ok());
  EXPECT_EQ((*loop)->slot_context(), 128);
  Result r;
  Request req = greedy(o.model->tokenizer().encode("Once upon a time", true), 50, r);
  int seen = 0;
  req.on_token = [&seen](int32_t) { return ++seen < 3; };
  ASSERT_TRUE((*loop)->submit(std::move(req)).ok());
  while (!(*loop)->idle()) ASSERT_TRUE((*loop)->step().ok());
  EXPECT_EQ(seen, 3);
  EXPECT_EQ(r.reason, FinishReason::kCancelled);
  EXPECT_EQ((*loop)->busy_slots(), 0);
  EXPECT_EQ(o.session->cache().used(), 0);

  Result ignored;
  EXPECT_EQ((*loop)->submit(greedy({}, 4, ignored)).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ((*loop)->submit(greedy(std::vector<int32_t>(200, 5), 4, ignored)).code(),
            ErrorCode::kOutOfRange);
  EXPECT_FALSE(BatchLoop::create(*o.session, {.n_slots = 0}).ok());
  EXPECT_FALSE(BatchLoop::create(*o.session, {.n_slots = 16}).ok());  // 16 cells a slot
}

}  // namespace
}  // namespace strata::engine
