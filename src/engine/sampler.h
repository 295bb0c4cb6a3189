// Picks the next token from logits: greedy, or temperature sampling with the usual filters.
#pragma once

#include <cstdint>
#include <deque>
#include <random>
#include <span>
#include <vector>

namespace strata::engine {

struct SamplerParams {
  float temperature = 0.8f;  ///< <= 0 picks the most likely token (greedy)
  int32_t top_k = 40;        ///< keep the k most likely; <= 0 keeps all
  float top_p = 0.95f;       ///< keep the smallest set with this much probability; 1 keeps all
  float min_p = 0.05f;  ///< drop tokens less likely than min_p * the top probability; 0 keeps all
  float repeat_penalty = 1.0f;  ///< > 1 discourages tokens seen in the last repeat_last_n
  int32_t repeat_last_n = 64;
  /// OpenAI's penalties over the same window: logit -= presence * (count > 0) + frequency *
  /// count, for each token seen count times; 0 turns each off.
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  uint64_t seed = 0xC0FFEE;
};

/// Applies, in llama.cpp's default order: repetition penalty, top-k, top-p, min-p,
/// temperature, then draws from the distribution (or takes the argmax when greedy).
/// Deterministic for a given seed.
class Sampler {
 public:
  explicit Sampler(const SamplerParams& params);

  /// Chooses a token from `logits` (one per vocabulary entry).
  int32_t sample(std::span<const float> logits);
  /// Records a token as part of the context (prompt or generated) for the repetition penalty.
  void accept(int32_t token);

 private:
  struct Candidate {
    int32_t id;
    float logit;
    float p;
  };
  void penalize(std::vector<Candidate>& c) const;

  SamplerParams params_;
  std::mt19937_64 rng_;
  std::deque<int32_t> recent_;
  std::vector<Candidate> candidates_;
};

}  // namespace strata::engine
