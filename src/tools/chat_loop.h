// `strata run --chat`: an interactive conversation on the terminal.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "engine/sampler.h"
#include "engine/session.h"
#include "model/chat/chat_template.h"

namespace strata::tools {

/// The template `strata run --chat` uses: the file at `path` when given, else the model's
/// `tokenizer.chat_template`, else ChatML with a one-line warning on stderr. An unreadable
/// file or a template that does not parse is an error naming it.
Result<model::ChatTemplate> load_chat_template(const std::string& path, const model::Model* model);

/// Reads user lines from stdin until EOF; for each, renders the conversation, generates the
/// reply (at most `n_predict` tokens, -1 for no limit) and prints it on stdout followed by a
/// newline. A non-empty `system_prompt` opens the conversation as the system message.
Status chat_loop(engine::Session& session, model::ChatTemplate tmpl,
                 const std::string& system_prompt, int32_t n_predict,
                 const engine::SamplerParams& sampling);

}  // namespace strata::tools
