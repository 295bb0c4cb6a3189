#include "engine/generate.h"

#include <algorithm>
#include <chrono>
#include <span>
#include <string>

namespace strata::engine {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Result<std::vector<int32_t>> tokenize_prompt(const Session& session, const std::string& prompt) {
  std::vector<int32_t> tokens = session.model().tokenizer().encode(prompt, /*add_special=*/true);
  if (tokens.empty()) return error(ErrorCode::kInvalidArgument, "the prompt is empty");
  const auto n_prompt = static_cast<int64_t>(tokens.size());
  if (session.n_past() + n_prompt >= session.n_ctx()) {
    return error(ErrorCode::kOutOfRange, "the prompt is " + std::to_string(n_prompt) +
                                             " tokens but the context holds " +
                                             std::to_string(session.n_ctx()) + " (raise -c)");
  }
  return tokens;
}

Result<GenerateStats> generate(Session& session, const GenerateParams& params,
                               const std::function<Status(std::string_view)>& on_text) {
  const auto& tok = session.model().tokenizer();
  auto tokenized = tokenize_prompt(session, params.prompt);
  if (!tokenized.ok()) return tokenized.status();
  const std::vector<int32_t>& prompt = *tokenized;
  const auto n_prompt = static_cast<int64_t>(prompt.size());
  GenerateStats stats;
  stats.n_prompt = n_prompt;
  Sampler sampler(params.sampling);
  for (int32_t t : prompt) sampler.accept(t);

  auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n_prompt; i += session.n_batch()) {
    const auto len = static_cast<size_t>(std::min(session.n_batch(), n_prompt - i));
    STRATA_RETURN_IF_ERROR(session.decode(std::span(prompt).subspan(static_cast<size_t>(i), len)));
  }
  stats.prompt_seconds = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  for (int32_t n = 0; params.n_predict < 0 || n < params.n_predict; ++n) {
    const int32_t next = sampler.sample(session.logits());
    if (tok.is_eog(next)) {
      stats.stop = StopReason::kEndOfText;
      break;
    }
    sampler.accept(next);
    stats.tokens.push_back(next);
    ++stats.n_generated;
    STRATA_RETURN_IF_ERROR(on_text(tok.token_to_piece(next)));
    if (params.n_predict >= 0 && n + 1 == params.n_predict) break;  // last token needs no decode
    if (session.n_past() >= session.n_ctx()) {                      // context full: stop cleanly
      stats.stop = StopReason::kContextFull;
      break;
    }
    STRATA_RETURN_IF_ERROR(session.decode(std::span(&next, 1)));
  }
  stats.generate_seconds = seconds_since(t0);
  return stats;
}

}  // namespace strata::engine
