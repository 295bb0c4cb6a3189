// Perplexity of a model on a text, computed as llama.cpp's llama-perplexity computes it.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/status.h"
#include "engine/session.h"

namespace strata::engine {

/// log p(target) under softmax(logits), as llama.cpp's perplexity tool computes it: logits
/// shifted by their maximum, exponentials taken in float and summed in double.
double log_softmax(std::span<const float> logits, int32_t target);

/// Running sums of negative log-likelihoods, and the estimates they give.
class NllStats {
 public:
  void add(double nll) {
    sum_ += nll;
    sum2_ += nll * nll;
    ++count_;
  }
  int64_t count() const { return count_; }
  /// Mean negative log-likelihood; 0 before any token.
  double mean() const { return count_ > 0 ? sum_ / static_cast<double>(count_) : 0.0; }
  /// exp(mean()).
  double ppl() const;
  /// Standard error of ppl(): ppl × the standard error of the mean NLL (sample variance over
  /// count - 1), as llama.cpp reports it. 0 when fewer than two tokens or no spread.
  double ppl_error() const;

 private:
  double sum_ = 0.0;
  double sum2_ = 0.0;
  int64_t count_ = 0;
};

struct PerplexityParams {
  int64_t n_ctx = 512;     ///< tokens per chunk; at least 4, at most the session's context
  int64_t n_batch = 2048;  ///< most tokens per decode call (also capped by the session's)
};

/// Progress after one chunk.
struct PerplexityChunk {
  int64_t index = 0;     ///< 0-based chunk number
  int64_t n_chunks = 0;  ///< chunks in the whole run
  double ppl = 0.0;      ///< running estimate over the chunks done so far
  double seconds = 0.0;  ///< time this chunk took
};

struct PerplexityResult {
  std::vector<double> chunk_ppl;  ///< running estimate after each chunk (llama.cpp's "[i]x")
  double ppl = 0.0;               ///< final estimate
  double ppl_error = 0.0;         ///< its standard error
  double mean_nll = 0.0;
  int64_t n_scored = 0;  ///< tokens scored in all
  int64_t n_chunks = 0;
};

/// kOutOfRange "the text is too short" unless `n_tokens` fill two chunks of `n_ctx` (the
/// first half of each chunk is context only); lets a caller check before making a session.
Status check_text_length(int64_t n_tokens, int64_t n_ctx);

/// Splits `tokens` (the whole text, tokenized with BOS as the vocabulary asks) into
/// non-overlapping chunks of n_ctx tokens, dropping the remainder. Each chunk is evaluated from
/// an empty cache (the session is reset) with its first token replaced by BOS when the
/// vocabulary adds BOS; the logits at positions n_ctx/2 .. n_ctx-2 score the token that follows.
/// Fewer than 2 × n_ctx tokens is kOutOfRange. `on_chunk`, when set, is called after each chunk.
/// Deterministic: scores are accumulated in position order.
Result<PerplexityResult> compute_perplexity(
    Session& session, std::span<const int32_t> tokens, const PerplexityParams& params,
    const std::function<void(const PerplexityChunk&)>& on_chunk = {});

}  // namespace strata::engine
