#include "engine/chat.h"

#include <algorithm>
#include <chrono>
#include <span>

namespace strata::engine {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Result<std::string> model_chat_template(const model::Model& model) {
  return model.file().get_string("tokenizer.chat_template");
}

Chat::Chat(Session& session, model::ChatTemplate tmpl, model::ChatRenderOptions opts,
           const SamplerParams& sampling)
    : session_(session), tmpl_(std::move(tmpl)), opts_(std::move(opts)), sampler_(sampling) {
  opts_.add_generation_prompt = true;
}

Result<std::vector<int32_t>> Chat::render_tokens() const {
  Result<std::string> text = tmpl_.render(messages_, opts_);
  if (!text.ok()) return text.status();
  const model::Tokenizer& tok = session_.model().tokenizer();
  // Templates write their special tokens as text; parse_special turns them back into ids.
  std::vector<int32_t> tokens = tok.encode(*text, /*add_special=*/false, /*parse_special=*/true);
  // A template that does not write BOS itself still gets the one the vocabulary asks for.
  if (tok.vocab().add_bos && tok.bos_id() >= 0 && (tokens.empty() || tokens[0] != tok.bos_id())) {
    tokens.insert(tokens.begin(), tok.bos_id());
  }
  return tokens;
}

Result<GenerateStats> Chat::respond(const std::string& user_text, int32_t n_predict,
                                    const std::function<Status(std::string_view)>& on_text) {
  messages_.push_back({"user", user_text, ""});
  Result<std::vector<int32_t>> rendered = render_tokens();
  if (!rendered.ok()) {
    messages_.pop_back();
    return rendered.status();
  }
  std::vector<int32_t>& prompt = *rendered;
  if (static_cast<int64_t>(prompt.size()) >= session_.n_ctx()) {
    messages_.pop_back();
    return error(ErrorCode::kOutOfRange, "the conversation is " + std::to_string(prompt.size()) +
                                             " tokens but the context holds " +
                                             std::to_string(session_.n_ctx()) + " (raise -c)");
  }
  // The cache can only be extended, so unless it holds a prefix of the new prompt (a template
  // may rewrite earlier turns, or tokenize the reply differently) it starts over.
  const bool extends =
      cached_.size() <= prompt.size() && std::equal(cached_.begin(), cached_.end(), prompt.begin());
  if (!extends) {
    session_.reset();
    cached_.clear();
  }
  GenerateStats stats;
  stats.n_prompt = static_cast<int64_t>(prompt.size() - cached_.size());
  auto t0 = std::chrono::steady_clock::now();
  const auto n_prompt = static_cast<int64_t>(prompt.size());
  for (auto i = static_cast<int64_t>(cached_.size()); i < n_prompt; i += session_.n_batch()) {
    const auto len = static_cast<size_t>(std::min(session_.n_batch(), n_prompt - i));
    const Status st = session_.decode(std::span(prompt).subspan(static_cast<size_t>(i), len));
    if (!st.ok()) {
      session_.reset();
      cached_.clear();
      messages_.pop_back();
      return st;
    }
    cached_.insert(cached_.end(), prompt.begin() + i,
                   prompt.begin() + i + static_cast<int64_t>(len));
  }
  for (size_t i = cached_.size() - static_cast<size_t>(stats.n_prompt); i < cached_.size(); ++i) {
    sampler_.accept(cached_[i]);
  }
  stats.prompt_seconds = seconds_since(t0);

  const model::Tokenizer& tok = session_.model().tokenizer();
  t0 = std::chrono::steady_clock::now();
  std::string reply;
  // A stop inside the reply leaves the cache holding exactly the tokens in cached_.
  for (int32_t n = 0; n_predict < 0 || n < n_predict; ++n) {
    const int32_t next = sampler_.sample(session_.logits());
    if (tok.is_eog(next)) {
      stats.stop = StopReason::kEndOfText;
      break;
    }
    sampler_.accept(next);
    stats.tokens.push_back(next);
    ++stats.n_generated;
    const std::string piece = tok.token_to_piece(next);
    reply += piece;
    STRATA_RETURN_IF_ERROR(on_text(piece));
    if (n_predict >= 0 && n + 1 == n_predict) break;
    if (session_.n_past() >= session_.n_ctx()) {
      stats.stop = StopReason::kContextFull;
      break;
    }
    STRATA_RETURN_IF_ERROR(session_.decode(std::span(&next, 1)));
    cached_.push_back(next);
  }
  stats.generate_seconds = seconds_since(t0);
  messages_.push_back({"assistant", reply, ""});
  return stats;
}

}  // namespace strata::engine
