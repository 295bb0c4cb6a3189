// Checks of a session's parameters against the model and the machine, made before anything
// large is allocated: impossible requests fail at once, doubtful ones get a warning.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.h"
#include "engine/session.h"
#include "model/arch/hparams.h"

namespace strata::tools {

/// Bytes a session needs beyond the weights, at least: the KV cache, and without flash
/// attention one layer's attention scores for a micro-batch.
size_t estimate_session_bytes(const model::Hparams& hp, const engine::SessionParams& params);

/// kInvalidArgument if a quantized cache type cannot hold this model's heads (a row must be
/// whole blocks); kOutOfMemory if the estimate exceeds the machine's memory (`memory_total`
/// bytes), naming both.
Status check_session(const model::Hparams& hp, const engine::SessionParams& params,
                     size_t memory_total);

/// Warnings on stderr, prefixed "strata COMMAND: warning:": more threads than cores, a
/// context above the model's training context.
void warn_session(const char* command, const model::Hparams& hp,
                  const engine::SessionParams& params);

}  // namespace strata::tools
