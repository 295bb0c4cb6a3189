#include "model/llama_hparams.h"

#include <string>

namespace strata::model {
namespace {

Status malformed(const std::string& what) {
  return error(ErrorCode::kMalformed, "model: " + what);
}

// Reads a positive integer under `key`, or `fallback` when absent (fallback < 0: required).
Result<int64_t> positive(const gguf::File& f, const std::string& key, int64_t fallback = -1) {
  if (f.find(key) == nullptr) {
    if (fallback < 0) return malformed("missing '" + key + "'");
    return fallback;
  }
  auto v = f.get_int(key);
  if (!v.ok()) return malformed("'" + key + "': " + v.status().message());
  if (*v <= 0 || *v > (int64_t{1} << 32)) {
    return malformed("'" + key + "' = " + std::to_string(*v) + " is out of range");
  }
  return *v;
}

Result<float> real(const gguf::File& f, const std::string& key, float fallback) {
  if (f.find(key) == nullptr) return fallback;
  auto v = f.get_float(key);
  if (!v.ok()) return malformed("'" + key + "': " + v.status().message());
  return *v;
}

}  // namespace

Result<LlamaHparams> read_llama_hparams(const gguf::File& f) {
  auto arch = f.get_string("general.architecture");
  if (!arch.ok()) return malformed("missing 'general.architecture'");
  if (*arch != "llama") {
    return error(ErrorCode::kUnsupported,
                 "model: unknown architecture '" + *arch + "' (supported: llama)");
  }
  LlamaHparams hp;
  Status st;
  // Keeps the first failure; later reads are skipped once one has failed.
  auto take = [&st](auto& field, auto r) {
    if (!st.ok()) return;
    if (r.ok()) {
      field = *r;
    } else {
      st = r.status();
    }
  };
  take(hp.n_embd, positive(f, "llama.embedding_length"));
  take(hp.n_layer, positive(f, "llama.block_count"));
  take(hp.n_head, positive(f, "llama.attention.head_count"));
  take(hp.n_head_kv, positive(f, "llama.attention.head_count_kv", hp.n_head));
  take(hp.n_ff, positive(f, "llama.feed_forward_length"));
  take(hp.n_ctx_train, positive(f, "llama.context_length", 2048));
  if (!st.ok()) return st;
  if (hp.n_embd % hp.n_head != 0) {
    return malformed("embedding length " + std::to_string(hp.n_embd) +
                     " is not a multiple of the head count " + std::to_string(hp.n_head));
  }
  if (hp.n_head % hp.n_head_kv != 0) {
    return malformed("head count " + std::to_string(hp.n_head) +
                     " is not a multiple of the KV head count " + std::to_string(hp.n_head_kv));
  }
  take(hp.n_rot, positive(f, "llama.rope.dimension_count", hp.head_dim()));
  if (hp.n_rot > hp.head_dim() || hp.n_rot % 2 != 0) {
    return malformed("rope dimension count " + std::to_string(hp.n_rot) +
                     " does not fit head size " + std::to_string(hp.head_dim()));
  }
  take(hp.rms_eps, real(f, "llama.attention.layer_norm_rms_epsilon", 1e-5f));
  take(hp.rope_freq_base, real(f, "llama.rope.freq_base", 10000.0f));
  // Linear rope scaling: older files store the factor directly, newer ones with a type.
  float factor = 0.0f;
  take(factor, real(f, "llama.rope.scale_linear", 0.0f));
  if (factor == 0.0f) {
    auto type = f.get_string("llama.rope.scaling.type");
    if (type.ok() && *type != "linear" && *type != "none") {
      return error(ErrorCode::kUnsupported,
                   "model: rope scaling type '" + *type + "' is not supported");
    }
    take(factor, real(f, "llama.rope.scaling.factor", 0.0f));
  }
  if (!st.ok()) return st;
  if (!(factor >= 0.0f) || factor > 1e6f) return malformed("bad rope scaling factor");
  hp.rope_freq_scale = factor == 0.0f ? 1.0f : 1.0f / factor;
  if (!(hp.rms_eps > 0.0f) || !(hp.rope_freq_base > 0.0f)) {
    return malformed("rms epsilon and rope base must be positive");
  }
  return hp;
}

}  // namespace strata::model
