#include "tools/chat_loop.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>

#include "engine/chat.h"
#include "model/model.h"
#include "tools/output.h"

namespace strata::tools {

Result<model::ChatTemplate> load_chat_template(const std::string& path, const model::Model* model) {
  std::string source;
  std::string origin;
  if (!path.empty()) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return error(ErrorCode::kNotFound, "cannot read chat template " + path);
    source.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    origin = path;
  } else if (model != nullptr) {
    Result<std::string> own = engine::model_chat_template(*model);
    if (own.ok()) {
      source = *own;
      origin = "the model's tokenizer.chat_template";
    } else {
      std::fprintf(stderr,
                   "warning: the model has no chat template; using ChatML (pass "
                   "--chat-template FILE for another)\n");
      source = model::kDefaultChatTemplate;
      origin = "ChatML";
    }
  }
  Result<model::ChatTemplate> t = model::ChatTemplate::parse(source);
  if (!t.ok()) return t.status().with_context(origin);
  return t;
}

namespace {

std::string token_text(const model::Tokenizer& tok, int32_t id) {
  return id >= 0 && id < tok.n_vocab() ? tok.vocab().tokens[static_cast<size_t>(id)]
                                       : std::string();
}

}  // namespace

Status chat_loop(engine::Session& session, model::ChatTemplate tmpl,
                 const std::string& system_prompt, int32_t n_predict,
                 const engine::SamplerParams& sampling) {
  const model::Tokenizer& tok = session.model().tokenizer();
  model::ChatRenderOptions opts;
  opts.bos_token = token_text(tok, tok.bos_id());
  opts.eos_token = token_text(tok, tok.eos_id());
  engine::Chat chat(session, std::move(tmpl), opts, sampling);
  if (!system_prompt.empty()) chat.add_message({"system", system_prompt, ""});
  const bool interactive = isatty(STDIN_FILENO) != 0;
  std::string line;
  for (;;) {
    if (interactive) {
      std::fputs("> ", stderr);
      std::fflush(stderr);
    }
    if (!std::getline(std::cin, line)) break;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    Result<engine::GenerateStats> stats = chat.respond(line, n_predict, write_stdout);
    if (!stats.ok()) {
      // A template that refuses the conversation (raise_exception) is bad input, not a usage
      // error.
      if (stats.status().code() != ErrorCode::kInvalidArgument) return stats.status();
      return error(ErrorCode::kMalformed, stats.status().message());
    }
    STRATA_RETURN_IF_ERROR(write_stdout("\n"));
    if (stats->stop == engine::StopReason::kContextFull) {
      std::fprintf(stderr, "stopped: the context of %lld tokens is full (raise -c)\n",
                   static_cast<long long>(session.n_ctx()));
    }
  }
  return check_stdout();
}

}  // namespace strata::tools
