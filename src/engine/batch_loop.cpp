#include "engine/batch_loop.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace strata::engine {
namespace {

// Log-softmax of the logits at `token`, and the n largest, summed in double.
TokenProbs probs_of(std::span<const float> logits, int32_t token, int32_t n) {
  const float m = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - m);
  const double log_z = m + std::log(sum);
  TokenProbs p;
  p.logprob = static_cast<float>(logits[static_cast<size_t>(token)] - log_z);
  const auto k = static_cast<size_t>(std::min<int64_t>(n, static_cast<int64_t>(logits.size())));
  std::vector<int32_t> ids(logits.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(),
                    [&](int32_t a, int32_t b) {
                      const float la = logits[static_cast<size_t>(a)];
                      const float lb = logits[static_cast<size_t>(b)];
                      return la > lb || (la == lb && a < b);
                    });
  for (size_t i = 0; i < k; ++i) {
    p.top.emplace_back(ids[i], static_cast<float>(logits[static_cast<size_t>(ids[i])] - log_z));
  }
  return p;
}

}  // namespace

Result<std::unique_ptr<BatchLoop>> BatchLoop::create(Session& session, const BatchLoopParams& p) {
  if (p.n_slots < 1 || p.n_slots > KvCells::kMaxSeqs) {
    return error(ErrorCode::kInvalidArgument,
                 "parallel slots must be in [1, " + std::to_string(KvCells::kMaxSeqs) + "]");
  }
  if (session.n_ctx() / p.n_slots < KvCells::kPage) {
    return error(ErrorCode::kInvalidArgument, "context of " + std::to_string(session.n_ctx()) +
                                                  " is too small for " + std::to_string(p.n_slots) +
                                                  " slots");
  }
  return out_of_memory_as_error("creating the batch loop", [&] {
    return Result<std::unique_ptr<BatchLoop>>(
        std::unique_ptr<BatchLoop>(new BatchLoop(session, p)));
  });
}

BatchLoop::BatchLoop(Session& s, const BatchLoopParams& p) : session_(s), params_(p) {
  if (params_.step_tokens <= 0) params_.step_tokens = s.n_batch();
  params_.step_tokens = std::min(params_.step_tokens, s.n_batch());
  // Whole pages per slot: a slot's sequence fills pages of its own, so slots of this size
  // always find room together.
  slot_ctx_ = s.n_ctx() / p.n_slots / KvCells::kPage * KvCells::kPage;
  slots_.resize(static_cast<size_t>(p.n_slots));
  for (size_t i = 0; i < slots_.size(); ++i) slots_[i].seq = static_cast<int32_t>(i);
  s.kv_cells().seq_rm(-1);
}

Status BatchLoop::submit(Request request) {
  if (request.prompt.empty()) return error(ErrorCode::kInvalidArgument, "empty prompt");
  if (static_cast<int64_t>(request.prompt.size()) >= slot_ctx_) {
    return error(ErrorCode::kOutOfRange, "prompt of " + std::to_string(request.prompt.size()) +
                                             " tokens does not fit a slot's context of " +
                                             std::to_string(slot_ctx_));
  }
  std::lock_guard lock(mu_);
  return out_of_memory_as_error("queuing a request", [&]() -> Status {
    queue_.push_back(std::move(request));  // left as it was if the queue cannot grow
    return {};
  });
}

bool BatchLoop::idle() const {
  return queued() == 0 && busy_slots() == 0;
}

size_t BatchLoop::queued() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

int BatchLoop::busy_slots() const {
  return static_cast<int>(
      std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.busy; }));
}

void BatchLoop::assign(Slot& slot, Request& req) {
  // What can fail to allocate comes first: if it does, the request is still queued as it was.
  auto sampler = std::make_unique<Sampler>(req.sampling);
  for (int32_t t : req.prompt) sampler->accept(t);
  // Keep the longest prefix the slot already holds; at least the last prompt token is
  // evaluated again, for its logits.
  size_t keep = 0;
  while (keep < slot.cached.size() && keep + 1 < req.prompt.size() &&
         slot.cached[keep] == req.prompt[keep]) {
    ++keep;
  }
  session_.kv_cells().seq_rm(slot.seq, static_cast<int32_t>(keep));
  slot.cached.resize(keep);
  slot.n_prompt_done = keep;
  slot.next = -1;
  slot.generated = 0;
  slot.sampler = std::move(sampler);
  slot.req = std::move(req);
  slot.busy = true;
}

void BatchLoop::finish(Slot& slot, FinishReason reason, const Status& st) {
  slot.busy = false;
  // A cancelled or failed request's tokens are not worth keeping as a prefix.
  if (reason == FinishReason::kCancelled || reason == FinishReason::kError) {
    session_.kv_cells().seq_rm(slot.seq);
    slot.cached.clear();
  }
  if (slot.req.on_done) slot.req.on_done(reason, st);
  slot.req = Request{};
}

Status BatchLoop::step() {
  try {
    return step_unguarded();
  } catch (const std::bad_alloc&) {
    // Where it failed, a slot's tokens may be ahead of its cache: every active request ends,
    // as after a failed decode, and their slots start afresh.
    const Status st = error(ErrorCode::kOutOfMemory, "batch step: out of memory");
    for (Slot& s : slots_) {
      if (s.busy) finish(s, FinishReason::kError, st);
    }
    return st;
  }
}

Status BatchLoop::step_unguarded() {
  // Waiting requests take free slots, the slot holding the longest prefix of the prompt first.
  {
    std::lock_guard lock(mu_);
    while (!queue_.empty()) {
      Slot* best = nullptr;
      size_t best_len = 0;
      for (Slot& s : slots_) {
        if (s.busy) continue;
        size_t n = 0;
        const auto& p = queue_.front().prompt;
        while (n < s.cached.size() && n < p.size() && s.cached[n] == p[n]) ++n;
        if (best == nullptr || n > best_len) {
          best = &s;
          best_len = n;
        }
      }
      if (best == nullptr) break;
      assign(*best, queue_.front());
      queue_.pop_front();
    }
  }
  // Generating slots first (one token each), then prompt chunks while the step has room.
  Batch b;
  std::vector<Slot*> row_slot;  // the slot of each kept row of logits
  for (Slot& s : slots_) {
    if (!s.busy || s.next < 0) continue;
    b.add(s.next, static_cast<int32_t>(s.cached.size()), s.seq, true);
    s.cached.push_back(s.next);
    row_slot.push_back(&s);
  }
  for (Slot& s : slots_) {
    if (!s.busy || s.next >= 0) continue;
    const auto room = params_.step_tokens - static_cast<int64_t>(b.size());
    if (room <= 0) break;
    const size_t left = s.req.prompt.size() - s.n_prompt_done;
    const size_t n = std::min(left, static_cast<size_t>(room));
    for (size_t i = 0; i < n; ++i) {
      const size_t at = s.n_prompt_done + i;
      const bool last = at + 1 == s.req.prompt.size();
      b.add(s.req.prompt[at], static_cast<int32_t>(at), s.seq, last);
      s.cached.push_back(s.req.prompt[at]);
      if (last) row_slot.push_back(&s);
    }
    s.n_prompt_done += n;
  }
  if (b.size() == 0) return {};
  if (Status st = session_.decode(b); !st.ok()) {
    for (Slot& s : slots_) {
      if (!s.busy) continue;
      finish(s, FinishReason::kError, st);
    }
    return st;
  }
  const model::Tokenizer& tok = session_.model().tokenizer();
  for (size_t r = 0; r < row_slot.size(); ++r) {
    Slot& s = *row_slot[r];
    const std::span<const float> logits = session_.logits(static_cast<int64_t>(r));
    const int32_t t = s.sampler->sample(logits);
    if (tok.is_eog(t)) {
      s.next = -1;
      finish(s, FinishReason::kStop);
      continue;
    }
    s.sampler->accept(t);
    ++s.generated;
    if (s.req.n_probs >= 0 && s.req.on_probs) s.req.on_probs(probs_of(logits, t, s.req.n_probs));
    if (s.req.on_token && !s.req.on_token(t)) {
      s.next = -1;
      finish(s, FinishReason::kCancelled);
      continue;
    }
    // The token is evaluated next step unless the request or the slot's context is done.
    if (s.generated >= s.req.max_tokens || static_cast<int64_t>(s.cached.size()) + 1 > slot_ctx_) {
      s.next = -1;
      finish(s, FinishReason::kLength);
      continue;
    }
    s.next = t;
  }
  return {};
}

}  // namespace strata::engine
