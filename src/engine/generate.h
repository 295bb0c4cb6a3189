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

/// Tokenizes the prompt (BOS added as the vocabulary asks), evaluates it in batches, then
/// samples until `n_predict` tokens, an end-of-generation token, or a full context. Each
/// generated token's text goes to `on_text` as soon as it is known. The prompt must fit the
/// context with room for at least one token; otherwise kOutOfRange before any work.
Result<GenerateStats> generate(Session& session, const GenerateParams& params,
                               const std::function<void(std::string_view)>& on_text);

}  // namespace strata::engine
