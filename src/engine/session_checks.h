// Checks of a session's parameters against the model and the machine, made before anything
// large is allocated, so that an impossible request fails at once and names its cause.
#pragma once

#include <cstddef>

#include "core/status.h"
#include "engine/session.h"
#include "model/arch/hparams.h"

namespace strata::engine {

/// Bytes a session needs beyond the weights, at least: the KV cache, and without flash
/// attention one layer's attention scores for a micro-batch.
size_t estimate_session_bytes(const model::Hparams& hp, const SessionParams& params);

/// kInvalidArgument if a quantized cache type cannot hold this model's heads (a row must be
/// whole blocks); kOutOfMemory if the estimate exceeds the machine's memory (`memory_total`
/// bytes; 0 checks nothing), naming both.
Status check_session(const model::Hparams& hp, const SessionParams& params, size_t memory_total);

}  // namespace strata::engine
