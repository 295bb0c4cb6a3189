// Loads llama.cpp's reference outputs from ../shared/golden/logits.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace strata::testing {

struct Golden {
  std::string model_path;
  std::string prompt;
  std::vector<int32_t> prompt_tokens;
  int64_t n_vocab = 0;
  std::vector<float> logits;  ///< [n_prompt][n_vocab]
  std::vector<int32_t> greedy_tokens;
};

/// Reads golden/logits/<name>.<prompt>.json and its logits; nullopt when absent.
std::optional<Golden> load_golden(const std::string& name, const std::string& prompt);

/// Root mean square of a - b over equal-length spans.
double rms_diff(std::span<const float> a, std::span<const float> b);

/// Path of a model in ../shared/models.
std::string model_path(const std::string& file);

}  // namespace strata::testing
