// Chat templates: renders a model's `tokenizer.chat_template` (Jinja) for a conversation,
// byte-identical to HF transformers' apply_chat_template, which renders with jinja2 in an
// ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with the loopcontrols
// extension, the globals raise_exception and strftime_now, and a tojson filter that is
// json.dumps(ensure_ascii=False) (no HTML escaping, unlike jinja2's own).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace strata::model {

namespace jinja {
struct Node;
}  // namespace jinja

/// One turn of a conversation.
struct ChatMessage {
  std::string role;     ///< "system", "user", "assistant", "tool", ...
  std::string content;  ///< the text of the turn
  /// More fields of the message as a JSON object (tool_calls, name, tool_call_id, ...); they
  /// override role and content when they name them (e.g. "content": null). Empty for none.
  std::string extra_json;
};

/// What a chat template sees besides the messages.
struct ChatRenderOptions {
  /// Append the header of the assistant's next turn, so generation continues as the reply.
  bool add_generation_prompt = true;
  std::string bos_token;
  std::string eos_token;
  /// The `tools` variable as a JSON array. Empty leaves `tools` undefined, as llama.cpp does
  /// (HF passes None, which the tool-use templates cannot iterate).
  std::string tools_json;
  /// More template variables as a JSON object (e.g. {"date_string": "26 Jul 2024"}).
  std::string extra_json;
};

/// ChatML, used when a model has no template of its own.
extern const char* const kDefaultChatTemplate;

/// A parsed template: parse once, render per conversation. Immutable; thread-safe to render.
class ChatTemplate {
 public:
  /// Parses `source`. A syntax error is kMalformed and a tag the renderer does not implement
  /// kUnsupported, both one line naming the template line.
  static Result<ChatTemplate> parse(const std::string& source);

  /// Renders `messages`. A failed render is an error whose message starts with
  /// "chat template: " and names the line: kUnsupported for a construct the renderer does not
  /// implement (a filter, test, method or function), kInvalidArgument for what jinja2 would
  /// raise on (raise_exception(msg) carries msg, undefined values used, type errors).
  Result<std::string> render(const std::vector<ChatMessage>& messages,
                             const ChatRenderOptions& opts) const;

  /// Renders with the template variables given as one JSON object ({"messages": [...],
  /// "add_generation_prompt": true, ...}), exactly as the caller spells them.
  Result<std::string> render_json(const std::string& variables_json) const;

 private:
  explicit ChatTemplate(std::shared_ptr<const std::vector<std::unique_ptr<jinja::Node>>> body)
      : body_(std::move(body)) {}
  std::shared_ptr<const std::vector<std::unique_ptr<jinja::Node>>> body_;
};

/// ChatTemplate::parse(template_source), then render.
Result<std::string> render_chat(const std::string& template_source,
                                const std::vector<ChatMessage>& messages,
                                const ChatRenderOptions& opts);

}  // namespace strata::model
