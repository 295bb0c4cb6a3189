// The text generation loop: prompt in, tokens out, streamed as text.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/sampler.h"
#include "engine/session.h"

namespace strata::engine {

struct GenerateParams {
  std::string prompt;
  int32_t n_predict =
      128;  ///< tokens to generate; -1 runs until end of generation or a full context
  SamplerParams sampling;
};

/// Why generation stopped.
enum class StopReason { kLength, kEndOfText, kContextFull };

struct GenerateStats {
  StopReason stop = StopReason::kLength;
  int64_t n_prompt = 0;
  int64_t n_generated = 0;
  double prompt_seconds = 0.0;
  double generate_seconds = 0.0;
  std::vector<int32_t> tokens;  ///< the generated tokens
};

/// The prompt's tokens (BOS added as the vocabulary asks), if they fit the session's context
/// with room for at least one more token: kInvalidArgument for an empty prompt, kOutOfRange
/// for one too long. Lets a caller check the prompt before it shows or evaluates anything.
Result<std::vector<int32_t>> tokenize_prompt(const Session& session, const std::string& prompt);

/// Tokenizes the prompt (as tokenize_prompt, whose errors it returns before any work),
/// evaluates it in batches, then samples until `n_predict` tokens, an end-of-generation token,
/// or a full context. Each generated token's text goes to `on_text` as soon as it is known; an
/// error from `on_text` (output that cannot be written) ends generation and is returned.
Result<GenerateStats> generate(Session& session, const GenerateParams& params,
                               const std::function<Status(std::string_view)>& on_text);

}  // namespace strata::engine
