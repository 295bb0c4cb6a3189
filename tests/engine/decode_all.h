// Feeding tokens to a session and collecting every row of logits, for the engine tests.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/session.h"

namespace strata::testing {

/// Decodes `tokens` after what the session already holds, in calls of at most its batch size,
/// and returns the logits of every token, row after row. A failed decode is a test failure.
std::vector<float> decode_all(engine::Session& s, std::span<const int32_t> tokens);

/// decode_all of `prompt`, then of three single-token decode steps after it (tokens 261, 378
/// and 403): every row of logits, prompt first.
std::vector<float> prompt_and_steps(engine::Session& s, std::span<const int32_t> prompt);

/// Generates `n` tokens greedily after `prompt` and returns them (empty, with a test failure,
/// when generation fails).
std::vector<int32_t> greedy_tokens(engine::Session& s, const std::string& prompt, size_t n);

}  // namespace strata::testing
