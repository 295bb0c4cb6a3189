// A conversation with a model: each user turn is rendered with the model's chat template,
// evaluated, and answered; the reply joins the conversation as the assistant's turn.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/generate.h"
#include "engine/sampler.h"
#include "engine/session.h"
#include "model/chat/chat_template.h"

namespace strata::engine {

/// The model's `tokenizer.chat_template`, or kNotFound when the file has none.
Result<std::string> model_chat_template(const model::Model& model);

/// Drives a Session through a conversation. The session's KV cache keeps the tokens of the
/// turns so far; a turn evaluates only the tokens the template appended after them (all of
/// them again when the template rewrote earlier turns).
class Chat {
 public:
  /// `opts` supplies bos/eos tokens and tools; add_generation_prompt is forced on.
  Chat(Session& session, model::ChatTemplate tmpl, model::ChatRenderOptions opts,
       const SamplerParams& sampling);

  /// Appends a message without answering it (a system prompt, earlier turns).
  void add_message(model::ChatMessage message) { messages_.push_back(std::move(message)); }

  /// Adds the user's message, then generates the reply until an end-of-generation token
  /// (EOS, end of turn) or `n_predict` tokens (-1: until the context is full), streaming its
  /// text to `on_text`, and appends the reply as the assistant's message. A conversation that
  /// no longer fits the context is kOutOfRange; the user's message is then withdrawn.
  Result<GenerateStats> respond(const std::string& user_text, int32_t n_predict,
                                const std::function<Status(std::string_view)>& on_text);

  const std::vector<model::ChatMessage>& messages() const { return messages_; }

 private:
  Result<std::vector<int32_t>> render_tokens() const;

  Session& session_;
  model::ChatTemplate tmpl_;
  model::ChatRenderOptions opts_;
  Sampler sampler_;
  std::vector<model::ChatMessage> messages_;
  std::vector<int32_t> cached_;  ///< the tokens in the session's KV cache, in order
};

}  // namespace strata::engine
