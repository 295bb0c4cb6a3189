// Hyperparameters of a decoder-only transformer, read from `<arch>.*` GGUF metadata. One
// struct serves every architecture: the fields an architecture does not use keep their
// defaults, which mean "off".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/op.h"
#include "core/status.h"
#include "gguf/file.h"

namespace strata::model {

struct Hparams {
  std::string arch = "llama";  ///< general.architecture
  int64_t n_vocab = 0;
  int64_t n_ctx_train = 0;  ///< context length the model was trained with
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;    ///< fewer than n_head under grouped-query attention
  int64_t n_embd_head = 0;  ///< size of a K/V head (`attention.key_length`); 0: n_embd / n_head
  int64_t n_ff = 0;
  int64_t n_rot = 0;  ///< rotated dimensions per head
  float rms_eps = 1e-5f;
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;  ///< 1 / linear rope scaling factor
  core::RopeMode rope_mode = core::RopeMode::kNormal;

  /// Sliding-window attention: a layer flagged in swa_layers sees only the n_swa latest
  /// positions (its own included), and rotates with its own rope base and scale.
  int64_t n_swa = 0;
  std::vector<bool> swa_layers;
  float rope_freq_base_swa = 10000.0f;
  float rope_freq_scale_swa = 1.0f;

  /// Q is multiplied by this after rope and the attention softmax is unscaled (Phi-3, Gemma);
  /// 0: the softmax scales the scores by 1 / sqrt(head_dim) (Llama, Qwen).
  float q_scale = 0.0f;
  float attn_softcap = 0.0f;   ///< scores become c * tanh(s / c); 0: off
  float final_softcap = 0.0f;  ///< the same for the logits
  float embd_scale = 0.0f;     ///< token embeddings are multiplied by it; 0: off

  int64_t n_expert = 0;       ///< mixture-of-experts FFN when > 0
  int64_t n_expert_used = 0;  ///< experts each token is routed to

  int64_t head_dim() const { return n_embd_head > 0 ? n_embd_head : n_embd / n_head; }
  int64_t n_embd_q() const { return head_dim() * n_head; }
  int64_t n_embd_kv() const { return head_dim() * n_head_kv; }
  bool is_swa(int64_t layer) const {
    return n_swa > 0 && layer >= 0 && layer < static_cast<int64_t>(swa_layers.size()) &&
           swa_layers[static_cast<size_t>(layer)];
  }
};

/// Reads and validates the hyperparameters of the file's architecture (see registry.h):
/// kUnsupported naming the architecture when it is unknown, kMalformed for missing or
/// inconsistent values.
Result<Hparams> read_hparams(const gguf::File& file);

/// Readers of `<arch>.<key>` values for the architectures' own keys. Absent keys give
/// `fallback`; a fallback below zero makes the key required.
Result<int64_t> read_positive(const gguf::File& file, const std::string& key,
                              int64_t fallback = -1);
Result<float> read_real(const gguf::File& file, const std::string& key, float fallback);

}  // namespace strata::model
