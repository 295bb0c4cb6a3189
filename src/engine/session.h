// A session: one model on one backend with its KV cache; evaluates tokens, keeps logits.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/device.h"
#include "core/status.h"
#include "engine/kv_cache.h"
#include "memory/graph_allocator.h"
#include "model/model.h"

namespace strata::engine {

struct SessionParams {
  int64_t n_ctx = 0;       ///< context size; 0 means the model's training context
  int64_t n_batch = 2048;  ///< most tokens one decode() call takes
  int64_t n_ubatch = 512;  ///< tokens per graph run (micro-batch)
  int n_threads = 1;
  core::Type type_k = core::Type::kF16;
  core::Type type_v = core::Type::kF16;
};

class Session {
 public:
  /// Creates the backend, the KV cache and a compute buffer sized for the largest micro-batch.
  static Result<std::unique_ptr<Session>> create(const model::Model& model, backend::Device& device,
                                                 const SessionParams& params);

  /// Evaluates `tokens` at the next positions, micro-batch by micro-batch. Keeps the logits
  /// of every token when `all_logits`, else only of the last. On error (context overflow,
  /// out of memory) the session is left as it was before the call.
  Status decode(std::span<const int32_t> tokens, bool all_logits = false);

  /// Logits of the i-th kept row of the last decode(); i = -1 is the last row.
  std::span<const float> logits(int64_t i = -1) const;
  int64_t n_outputs() const;
  /// Tokens held in the cache.
  int64_t n_past() const { return cache_->used(); }
  int64_t n_ctx() const { return cache_->size(); }
  int64_t n_batch() const { return params_.n_batch; }
  /// Forgets every token (the cache is emptied).
  void reset() { cache_->clear(); }
  const model::Model& model() const { return *model_; }
  const KvCache& cache() const { return *cache_; }
  size_t compute_buffer_bytes() const { return galloc_->buffer_size(); }

 private:
  Session() = default;
  Status run_ubatch(std::span<const int32_t> tokens, bool all_logits, std::vector<float>& out);

  const model::Model* model_ = nullptr;
  SessionParams params_;
  std::unique_ptr<backend::Backend> backend_;
  std::unique_ptr<KvCache> cache_;
  std::unique_ptr<memory::GraphAllocator> galloc_;
  std::vector<float> logits_;
};

}  // namespace strata::engine
