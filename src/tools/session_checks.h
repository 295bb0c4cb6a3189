// Warnings about a session's parameters for the commands; the checks that fail a session
// live in the engine (engine/session_checks.h), where every way of opening a model uses them.
#pragma once

#include "engine/session.h"
#include "engine/session_checks.h"
#include "model/arch/hparams.h"

namespace strata::tools {

/// Warnings on stderr, prefixed "strata COMMAND: warning:": more threads than cores, a
/// context above the model's training context.
void warn_session(const char* command, const model::Hparams& hp,
                  const engine::SessionParams& params);

}  // namespace strata::tools
