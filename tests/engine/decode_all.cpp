#include "decode_all.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "engine/generate.h"

namespace strata::testing {

std::vector<float> decode_all(engine::Session& s, std::span<const int32_t> tokens) {
  std::vector<float> out;
  const auto batch = static_cast<size_t>(s.n_batch());
  for (size_t i = 0; i < tokens.size(); i += batch) {
    const Status st = s.decode(tokens.subspan(i, std::min(batch, tokens.size() - i)), true);
    EXPECT_TRUE(st.ok()) << st.message();
    if (!st.ok()) return out;
    for (int64_t r = 0; r < s.n_outputs(); ++r) {
      auto row = s.logits(r);
      out.insert(out.end(), row.begin(), row.end());
    }
  }
  return out;
}

std::vector<float> prompt_and_steps(engine::Session& s, std::span<const int32_t> prompt) {
  std::vector<float> out = decode_all(s, prompt);
  for (int32_t t : {261, 378, 403}) {
    const auto row = decode_all(s, std::span(&t, 1));
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

std::vector<int32_t> greedy_tokens(engine::Session& s, const std::string& prompt, size_t n) {
  engine::GenerateParams gp;
  gp.prompt = prompt;
  gp.n_predict = static_cast<int32_t>(n);
  gp.sampling.temperature = 0.0f;
  auto stats = engine::generate(s, gp, [](std::string_view) { return Status{}; });
  EXPECT_TRUE(stats.ok()) << stats.status().message();
  return stats.ok() ? stats->tokens : std::vector<int32_t>{};
}

}  // namespace strata::testing
