// Sequences decoded together in one batch give each exactly what it gives alone: the same
// logits bit for bit, so the same greedy text. Across models, device layouts, paged
// execution and fused attention.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "decode_all.h"
#include "engine/session.h"
#include "golden.h"
#include "layout_cases.h"
#include "model/model.h"

namespace strata::engine {
namespace {

const char* const kPrompts[] = {
    "Once upon a time",
    "Lily and Tom went to the park. They saw a big dog!",
    "The sun was hot and the little bird was thirsty",
    "Tim had a red ball. He liked to throw it high in the sky and catch it with both hands.",
};
constexpr int kSteps = 12;

int32_t argmax(std::span<const float> row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

// Every row of logits one sequence produces: its prompt's, then each greedy step's.
struct Trace {
  std::vector<float> logits;
  std::vector<int32_t> tokens;
};

Trace alone(Session& s, const std::vector<int32_t>& prompt) {
  Trace t;
  s.reset();
  t.logits = testing::decode_all(s, prompt);
  int32_t next = argmax(s.logits(-1));
  for (int i = 0; i < kSteps; ++i) {
    t.tokens.push_back(next);
    const std::vector<int32_t> one = {next};
    EXPECT_TRUE(s.decode(one, true).ok());
    auto row = s.logits(0);
    t.logits.insert(t.logits.end(), row.begin(), row.end());
    next = argmax(row);
  }
  return t;
}

// All prompts in one batch (interleaved token by token), then one token per sequence a step.
std::vector<Trace> together(Session& s, const std::vector<std::vector<int32_t>>& prompts) {
  const auto n = prompts.size();
  std::vector<Trace> t(n);
  Batch b;
  size_t longest = 0;
  for (const auto& p : prompts) longest = std::max(longest, p.size());
  std::vector<std::pair<size_t, size_t>> rows;  // (sequence, position) of each kept row
  for (size_t i = 0; i < longest; ++i) {
    for (size_t q = 0; q < n; ++q) {
      if (i >= prompts[q].size()) continue;
      b.add(prompts[q][i], static_cast<int32_t>(i), static_cast<int32_t>(q), true);
      rows.emplace_back(q, i);
    }
  }
  EXPECT_TRUE(s.decode(b).ok());
  std::vector<int32_t> next(n);
  for (size_t r = 0; r < rows.size(); ++r) {
    auto row = s.logits(static_cast<int64_t>(r));
    Trace& tr = t[rows[r].first];
    tr.logits.insert(tr.logits.end(), row.begin(), row.end());
    if (rows[r].second + 1 == prompts[rows[r].first].size()) next[rows[r].first] = argmax(row);
  }
  for (int step = 0; step < kSteps; ++step) {
    b.clear();
    for (size_t q = 0; q < n; ++q) {
      t[q].tokens.push_back(next[q]);
      b.add(next[q], static_cast<int32_t>(prompts[q].size()) + step, static_cast<int32_t>(q), true);
    }
    EXPECT_TRUE(s.decode(b).ok());
    for (size_t q = 0; q < n; ++q) {
      auto row = s.logits(static_cast<int64_t>(q));
      t[q].logits.insert(t[q].logits.end(), row.begin(), row.end());
      next[q] = argmax(row);
    }
  }
  return t;
}

struct BatchCase {
  std::string model;
  testing::LayoutCase layout;
  bool paged;
  bool flash_attn;
};

void PrintTo(const BatchCase& c, std::ostream* os) {
  *os << c.model << " " << c.layout.name << (c.paged ? " paged" : "")
      << (c.flash_attn ? " fa" : "");
}

class Batching : public ::testing::TestWithParam<BatchCase> {};

TEST_P(Batching, EverySequenceGetsWhatItGetsAlone) {
  const BatchCase& c = GetParam();
  const std::string path = testing::model_path(c.model + ".gguf");
  const testing::OpenOptions o{
      .ubatch = 16, .paged = c.paged, .flash_attn = c.flash_attn, .n_ctx = 256};
  testing::Opened one = testing::open_with_layout(path, c.layout, o);
  testing::OpenOptions wide = o;
  wide.n_ctx = 1024;
  testing::Opened all = testing::open_with_layout(path, c.layout, wide);
  ASSERT_TRUE(one.session && all.session) << path;
  std::vector<std::vector<int32_t>> prompts;
  for (const char* p : kPrompts) prompts.push_back(one.model->tokenizer().encode(p, true));
  const std::vector<Trace> batched = together(*all.session, prompts);
  for (size_t q = 0; q < prompts.size(); ++q) {
    const Trace ref = alone(*one.session, prompts[q]);
    EXPECT_EQ(batched[q].tokens, ref.tokens) << "sequence " << q;
    EXPECT_TRUE(batched[q].logits == ref.logits) << "sequence " << q;
  }
  // The cache holds every sequence's tokens; removing one frees its cells only.
  const int64_t used = all.session->cache().used();
  all.session->kv_cells().seq_rm(2);
  EXPECT_EQ(all.session->kv_cells().seq_pos_max(2), -1);
  EXPECT_EQ(all.session->cache().used(), used - static_cast<int64_t>(prompts[2].size()) - kSteps);
}

INSTANTIATE_TEST_SUITE_P(
    Models, Batching,
    ::testing::Values(BatchCase{"stories260K", testing::plain_layout(), false, false},
                      BatchCase{"synth256-q8_0", testing::plain_layout(), false, false},
                      BatchCase{"arch-gemma2", testing::plain_layout(), false, false},
                      BatchCase{"stories260K", {"partial_2parts", 2, 3, {}, true}, false, false},
                      BatchCase{"stories260K", {"partial_2parts", 2, 3, {}, true}, true, false},
                      BatchCase{"synth256-q8_0", testing::plain_layout(), false, true},
                      BatchCase{"arch-gemma2", testing::plain_layout(), false, true}),
    [](const auto& param_info) {
      std::string n = param_info.param.model + "_" + param_info.param.layout.name +
                      (param_info.param.paged ? "_paged" : "") +
                      (param_info.param.flash_attn ? "_fa" : "");
      std::replace(n.begin(), n.end(), '-', '_');
      return n;
    });

}  // namespace
}  // namespace strata::engine
