#include "engine/perplexity.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <string>

namespace strata::engine {

double log_softmax(std::span<const float> logits, int32_t target) {
  assert(target >= 0 && static_cast<size_t>(target) < logits.size());
  float max_logit = logits[0];
  for (float l : logits) max_logit = std::max(max_logit, l);
  // Float exponentials summed in double, and the target's shifted logit in float, exactly as
  // llama.cpp's log_softmax, so the two tools agree to the last digits they print.
  double sum_exp = 0.0;
  for (float l : logits) sum_exp += std::exp(l - max_logit);
  return static_cast<double>(logits[static_cast<size_t>(target)] - max_logit) - std::log(sum_exp);
}

double NllStats::ppl() const {
  return std::exp(mean());
}

double NllStats::ppl_error() const {
  if (count_ < 2) return 0.0;
  const double n = static_cast<double>(count_);
  const double mean_nll = sum_ / n;
  const double variance = sum2_ / n - mean_nll * mean_nll;
  if (!(variance > 0.0)) return 0.0;
  return std::sqrt(variance / (n - 1.0)) * std::exp(mean_nll);
}

Status check_text_length(int64_t n_tokens, int64_t n_ctx) {
  if (n_tokens < 2 * n_ctx) {
    return error(ErrorCode::kOutOfRange, "the text is too short: " + std::to_string(n_tokens) +
                                             " tokens; need at least " + std::to_string(2 * n_ctx) +
                                             " tokens (two chunks of " + std::to_string(n_ctx) +
                                             ")");
  }
  return {};
}

Result<PerplexityResult> compute_perplexity(
    Session& session, std::span<const int32_t> tokens, const PerplexityParams& params,
    const std::function<void(const PerplexityChunk&)>& on_chunk) {
  const int64_t n_ctx = params.n_ctx;
  if (n_ctx < 4) {
    return error(ErrorCode::kInvalidArgument,
                 "the chunk size must be at least 4 tokens, got " + std::to_string(n_ctx));
  }
  if (n_ctx > session.n_ctx()) {
    return error(ErrorCode::kInvalidArgument, "chunks of " + std::to_string(n_ctx) +
                                                  " tokens do not fit the session's context of " +
                                                  std::to_string(session.n_ctx()));
  }
  const auto n_tokens = static_cast<int64_t>(tokens.size());
  STRATA_RETURN_IF_ERROR(check_text_length(n_tokens, n_ctx));
  const int64_t n_batch = std::min(params.n_batch, session.n_batch());
  if (n_batch < 1) {
    return error(ErrorCode::kInvalidArgument, "the batch size must be at least 1");
  }
  const auto& vocab = session.model().tokenizer().vocab();
  const bool add_bos = vocab.add_bos && vocab.bos_id >= 0;

  PerplexityResult result;
  result.n_chunks = n_tokens / n_ctx;
  // The first half of each chunk is context only: its predictions see too little to be fair.
  const int64_t first = n_ctx / 2;
  NllStats stats;
  std::vector<int32_t> chunk(static_cast<size_t>(n_ctx));
  for (int64_t c = 0; c < result.n_chunks; ++c) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto start = static_cast<size_t>(c * n_ctx);
    std::copy_n(tokens.begin() + static_cast<std::ptrdiff_t>(start), chunk.size(), chunk.begin());
    if (add_bos) chunk[0] = vocab.bos_id;
    session.reset();
    for (int64_t j = 0; j < n_ctx; j += n_batch) {
      const int64_t len = std::min(n_batch, n_ctx - j);
      const bool scores = j + len > first;
      Status st = session.decode(
          std::span(chunk).subspan(static_cast<size_t>(j), static_cast<size_t>(len)), scores);
      if (!st.ok()) return st.with_context("chunk " + std::to_string(c + 1));
      if (!scores) continue;
      for (int64_t pos = std::max(j, first); pos < std::min(j + len, n_ctx - 1); ++pos) {
        // Targets come from the text itself, not the BOS-patched chunk (they never differ:
        // position 0 is never a target).
        const int32_t target = tokens[start + static_cast<size_t>(pos) + 1];
        stats.add(-log_softmax(session.logits(pos - j), target));
      }
    }
    result.chunk_ppl.push_back(stats.ppl());
    if (on_chunk) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      on_chunk({c, result.n_chunks, stats.ppl(), seconds});
    }
  }
  result.ppl = stats.ppl();
  result.ppl_error = stats.ppl_error();
  result.mean_nll = stats.mean();
  result.n_scored = stats.count();
  return result;
}

}  // namespace strata::engine
