// Continuous batching: requests share one session, each in a slot (a KV sequence). Every step
// evaluates one batch holding the next token of every generating slot and chunks of waiting
// prompts, so one pass over the weights serves every active request. A request joins at the
// next step and leaves when it is done; a new prompt that extends what a free slot already
// holds reuses that prefix.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "core/status.h"
#include "engine/sampler.h"
#include "engine/session.h"

namespace strata::engine {

/// Why a request ended.
enum class FinishReason { kStop, kLength, kCancelled, kError };

/// The model's log-probabilities at a generated token (from the raw logits, before sampling
/// filters): the chosen token's, and the most likely tokens' in decreasing order.
struct TokenProbs {
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top;
};

struct Request {
  std::vector<int32_t> prompt;  ///< tokens, BOS included as the caller wants
  int32_t max_tokens = 128;     ///< tokens to generate at most
  SamplerParams sampling;
  /// Called with each generated token (end-of-generation tokens are not passed); returning
  /// false cancels the request, which frees its slot at once.
  std::function<bool(int32_t token)> on_token;
  /// -1: no probabilities; n >= 0: on_probs gets each generated token's log-probability and
  /// the n most likely tokens', just before on_token.
  int32_t n_probs = -1;
  std::function<void(const TokenProbs& probs)> on_probs;
  /// Called once when the request ends; `error` is set with kError.
  std::function<void(FinishReason reason, const Status& error)> on_done;
};

struct BatchLoopParams {
  int n_slots = 4;
  /// Tokens one step evaluates at most: every generating slot's next token first, then prompt
  /// chunks (so a long prompt does not stall the others). 0: the session's batch size.
  int64_t step_tokens = 0;
};

class BatchLoop {
 public:
  /// Each slot may hold session.n_ctx() / n_slots tokens of prompt and generation (rounded
  /// down to whole KV pages; at least one page each).
  static Result<std::unique_ptr<BatchLoop>> create(Session& session, const BatchLoopParams& p);

  /// Queues a request; thread-safe. kOutOfRange when the prompt does not fit a slot,
  /// kInvalidArgument when it is empty; on_done is not called then.
  Status submit(Request request);
  /// One step: assigns waiting requests to free slots, evaluates one batch, samples, delivers
  /// tokens, ends finished requests. A failed decode ends every active request with kError
  /// and is returned. Call from one thread.
  Status step();
  /// Nothing queued and no slot busy.
  bool idle() const;
  size_t queued() const;
  int busy_slots() const;
  int64_t slot_context() const { return slot_ctx_; }

 private:
  struct Slot {
    int32_t seq = 0;
    bool busy = false;
    Request req;
    std::vector<int32_t> cached;  ///< tokens the slot's sequence holds, in order
    size_t n_prompt_done = 0;     ///< prompt tokens evaluated so far
    int32_t next = -1;            ///< sampled token to evaluate next (-1: none yet)
    int32_t generated = 0;
    std::unique_ptr<Sampler> sampler;
  };

  BatchLoop(Session& s, const BatchLoopParams& p);
  void assign(Slot& slot, Request& req);
  Status step_unguarded();
  void finish(Slot& slot, FinishReason reason, const Status& st = {});

  Session& session_;
  BatchLoopParams params_;
  int64_t slot_ctx_ = 0;
  std::vector<Slot> slots_;
  mutable std::mutex mu_;  // guards queue_
  std::deque<Request> queue_;
};

}  // namespace strata::engine
