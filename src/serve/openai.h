// The OpenAI API's request and response bodies, as strata serve reads and writes them.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "engine/sampler.h"

namespace strata::serve {

struct Message {
  std::string role;
  std::string content;
};

/// A completion or chat completion request, checked.
struct CompletionRequest {
  bool chat = false;
  std::string prompt;             ///< completions
  std::vector<Message> messages;  ///< chat completions
  int32_t max_tokens = -1;        ///< -1: until the slot's context is full
  engine::SamplerParams sampling;
  std::vector<std::string> stop;
  bool stream = false;
  std::string model;
  /// -1: no log-probabilities; n >= 0: each token's, with the n most likely alternatives
  /// (completions: `logprobs` or llama.cpp's `n_probs`; chat: `logprobs` and `top_logprobs`).
  int32_t n_probs = -1;
};

/// Parses a request body; kInvalidArgument naming the field for malformed JSON, wrong types,
/// missing fields or values out of range.
Result<CompletionRequest> parse_completion(const std::string& body, bool chat);

/// {"error": {"message": ..., "type": ..., "code": ...}} as OpenAI sends it.
std::string error_body(const std::string& message, const std::string& type, int code);

}  // namespace strata::serve
