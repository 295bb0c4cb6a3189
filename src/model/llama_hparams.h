// Hyperparameters of a Llama-family model, read from `llama.*` GGUF metadata.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "gguf/file.h"

namespace strata::model {

struct LlamaHparams {
  int64_t n_vocab = 0;
  int64_t n_ctx_train = 0;  ///< context length the model was trained with
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;  ///< fewer than n_head under grouped-query attention
  int64_t n_ff = 0;
  int64_t n_rot = 0;  ///< rotated dimensions per head
  float rms_eps = 1e-5f;
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;  ///< 1 / linear rope scaling factor

  int64_t head_dim() const { return n_embd / n_head; }
  int64_t n_embd_kv() const { return head_dim() * n_head_kv; }
};

/// Reads and validates the hyperparameters. `general.architecture` must be "llama"; any
/// other architecture is kUnsupported. Missing or inconsistent values are kMalformed.
Result<LlamaHparams> read_llama_hparams(const gguf::File& file);

}  // namespace strata::model
