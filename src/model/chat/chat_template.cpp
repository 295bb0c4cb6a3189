#include "model/chat/chat_template.h"

#include "model/chat/json.h"
#include "model/chat/lexer.h"
#include "model/chat/parser.h"
#include "model/chat/renderer.h"

namespace strata::model {

const char* const kDefaultChatTemplate =
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

namespace {

Result<jinja::Value> parse_object(const std::string& json, const std::string& what) {
  Result<jinja::Value> v = jinja::parse_json(json);
  if (!v.ok()) return v.status().with_context("chat template: " + what);
  if (!v->is_dict()) {
    return error(ErrorCode::kInvalidArgument, "chat template: " + what + " is not a JSON object");
  }
  return v;
}

}  // namespace

Result<ChatTemplate> ChatTemplate::parse(const std::string& source) {
  Result<std::vector<jinja::Token>> tokens = jinja::tokenize(source);
  if (!tokens.ok()) return tokens.status();
  Result<jinja::Body> body = jinja::parse(*tokens);
  if (!body.ok()) return body.status();
  return ChatTemplate(std::make_shared<const jinja::Body>(std::move(*body)));
}

Result<std::string> ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                         const ChatRenderOptions& opts) const {
  jinja::ValueList list;
  for (const ChatMessage& m : messages) {
    jinja::ValueDict fields = {{"role", jinja::Value(m.role)},
                               {"content", jinja::Value(m.content)}};
    if (!m.extra_json.empty()) {
      Result<jinja::Value> extra = parse_object(m.extra_json, "a message's extra fields");
      if (!extra.ok()) return extra.status();
      for (const auto& [k, v] : extra->dict()) {
        bool replaced = false;
        for (auto& f : fields) {
          if (f.first == k) {
            f.second = v;
            replaced = true;
          }
        }
        if (!replaced) fields.emplace_back(k, v);
      }
    }
    list.emplace_back(std::move(fields));
  }
  jinja::ValueDict vars = {{"messages", jinja::Value(std::move(list))},
                           {"add_generation_prompt", jinja::Value(opts.add_generation_prompt)},
                           {"bos_token", jinja::Value(opts.bos_token)},
                           {"eos_token", jinja::Value(opts.eos_token)}};
  if (!opts.tools_json.empty()) {
    Result<jinja::Value> tools = jinja::parse_json(opts.tools_json);
    if (!tools.ok()) return tools.status().with_context("chat template: tools");
    if (!tools->is_list()) {
      return error(ErrorCode::kInvalidArgument, "chat template: tools is not a JSON array");
    }
    vars.emplace_back("tools", std::move(*tools));
  }
  if (!opts.extra_json.empty()) {
    Result<jinja::Value> extra = parse_object(opts.extra_json, "the extra variables");
    if (!extra.ok()) return extra.status();
    for (const auto& entry : extra->dict()) vars.push_back(entry);
  }
  return jinja::render(*body_, vars);
}

Result<std::string> ChatTemplate::render_json(const std::string& variables_json) const {
  Result<jinja::Value> vars = parse_object(variables_json, "the template variables");
  if (!vars.ok()) return vars.status();
  return jinja::render(*body_, vars->dict());
}

Result<std::string> render_chat(const std::string& template_source,
                                const std::vector<ChatMessage>& messages,
                                const ChatRenderOptions& opts) {
  Result<ChatTemplate> t = ChatTemplate::parse(template_source);
  if (!t.ok()) return t.status();
  return t->render(messages, opts);
}

}  // namespace strata::model
