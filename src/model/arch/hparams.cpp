#include "model/arch/hparams.h"

#include <string>

#include "model/arch/architecture.h"

namespace strata::model {
namespace {

Status malformed(const std::string& what) {
  return error(ErrorCode::kMalformed, "model: " + what);
}

std::string supported_list() {
  std::string s;
  for (std::string_view n : architecture_names()) {
    if (!s.empty()) s += ", ";
    s += n;
  }
  return s;
}

}  // namespace

Result<int64_t> read_positive(const gguf::File& f, const std::string& key, int64_t fallback) {
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

Result<float> read_real(const gguf::File& f, const std::string& key, float fallback) {
  if (f.find(key) == nullptr) return fallback;
  auto v = f.get_float(key);
  if (!v.ok()) return malformed("'" + key + "': " + v.status().message());
  return *v;
}

Result<Hparams> read_hparams(const gguf::File& f) {
  auto arch_name = f.get_string("general.architecture");
  if (!arch_name.ok()) return malformed("missing 'general.architecture'");
  const Architecture* arch = find_architecture(*arch_name);
  if (arch == nullptr) {
    return error(ErrorCode::kUnsupported, "model: unknown architecture '" + *arch_name +
                                              "' (supported: " + supported_list() + ")");
  }
  Hparams hp;
  hp.arch = *arch_name;
  const std::string a = hp.arch + ".";
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
  take(hp.n_embd, read_positive(f, a + "embedding_length"));
  take(hp.n_layer, read_positive(f, a + "block_count"));
  take(hp.n_head, read_positive(f, a + "attention.head_count"));
  take(hp.n_head_kv, read_positive(f, a + "attention.head_count_kv", hp.n_head));
  take(hp.n_ff, read_positive(f, a + "feed_forward_length"));
  take(hp.n_ctx_train, read_positive(f, a + "context_length", 2048));
  take(hp.n_embd_head, read_positive(f, a + "attention.key_length", 0));
  if (!st.ok()) return st;
  if (hp.n_embd_head == 0 && hp.n_embd % hp.n_head != 0) {
    return malformed("embedding length " + std::to_string(hp.n_embd) +
                     " is not a multiple of the head count " + std::to_string(hp.n_head));
  }
  int64_t value_length = 0;
  take(value_length, read_positive(f, a + "attention.value_length", hp.head_dim()));
  if (!st.ok()) return st;
  if (value_length != hp.head_dim()) {
    return error(ErrorCode::kUnsupported, "model: value heads of " + std::to_string(value_length) +
                                              " differ from key heads of " +
                                              std::to_string(hp.head_dim()));
  }
  if (hp.n_head % hp.n_head_kv != 0) {
    return malformed("head count " + std::to_string(hp.n_head) +
                     " is not a multiple of the KV head count " + std::to_string(hp.n_head_kv));
  }
  take(hp.n_rot, read_positive(f, a + "rope.dimension_count", hp.head_dim()));
  if (!st.ok()) return st;
  if (hp.n_rot > hp.head_dim() || hp.n_rot % 2 != 0) {
    return malformed("rope dimension count " + std::to_string(hp.n_rot) +
                     " does not fit head size " + std::to_string(hp.head_dim()));
  }
  take(hp.rms_eps, read_real(f, a + "attention.layer_norm_rms_epsilon", 1e-5f));
  take(hp.rope_freq_base, read_real(f, a + "rope.freq_base", 10000.0f));
  // Linear rope scaling: older files store the factor directly, newer ones with a type.
  float factor = 0.0f;
  take(factor, read_real(f, a + "rope.scale_linear", 0.0f));
  if (factor == 0.0f) {
    auto type = f.get_string(a + "rope.scaling.type");
    if (type.ok() && *type != "linear" && *type != "none") {
      return error(ErrorCode::kUnsupported,
                   "model: rope scaling type '" + *type + "' is not supported");
    }
    take(factor, read_real(f, a + "rope.scaling.factor", 0.0f));
  }
  if (!st.ok()) return st;
  if (!(factor >= 0.0f) || factor > 1e6f) return malformed("bad rope scaling factor");
  hp.rope_freq_scale = factor == 0.0f ? 1.0f : 1.0f / factor;
  if (!(hp.rms_eps > 0.0f) || !(hp.rope_freq_base > 0.0f)) {
    return malformed("rms epsilon and rope base must be positive");
  }
  take(hp.n_expert, read_positive(f, a + "expert_count", 0));
  take(hp.n_expert_used, read_positive(f, a + "expert_used_count", 0));
  if (!st.ok()) return st;
  if ((hp.n_expert > 0) != (hp.n_expert_used > 0) || hp.n_expert_used > hp.n_expert) {
    return malformed("expert_used_count " + std::to_string(hp.n_expert_used) +
                     " does not fit expert_count " + std::to_string(hp.n_expert));
  }
  STRATA_RETURN_IF_ERROR(arch->configure(f, hp));
  return hp;
}

}  // namespace strata::model
