// Checks of a session's parameters against the model and the machine, made before the
// session is created: impossible requests fail at once, doubtful ones get a warning.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "engine/session.h"
#include "model/llama_hparams.h"

namespace strata::tools {

/// kInvalidArgument if a quantized cache type cannot hold this model's heads (a row must be
/// whole blocks).
Status check_session(const model::LlamaHparams& hp, const engine::SessionParams& params);

/// Warnings on stderr, prefixed "strata COMMAND: warning:": more threads than cores, a
/// context above the model's training context.
void warn_session(const char* command, const model::LlamaHparams& hp,
                  const engine::SessionParams& params);

}  // namespace strata::tools
