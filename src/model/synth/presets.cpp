#include <array>

#include "model/synth/synth.h"

namespace strata::model {
namespace {

struct Preset {
  std::string_view name;
  int64_t n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab, n_ctx;
  float rope_freq_base;
  std::string_view arch = "llama";
};

// The published shapes (vocabulary sizes are those of each model's own tokenizer).
constexpr std::array kPresets = {
    Preset{"tiny", 64, 2, 4, 2, 128, 512, 512, 10000.0f},
    Preset{"llama-110m", 768, 12, 12, 12, 2048, 32000, 1024, 10000.0f},  // llama2.c stories110M
    Preset{"tinyllama-1.1b", 2048, 22, 32, 4, 5632, 32000, 2048, 10000.0f},
    Preset{"llama2-7b", 4096, 32, 32, 32, 11008, 32000, 4096, 10000.0f},
    Preset{"llama3-8b", 4096, 32, 32, 8, 14336, 128256, 8192, 500000.0f},
    Preset{"qwen2.5-0.5b", 896, 24, 14, 2, 4864, 151936, 32768, 1000000.0f, "qwen2"},
    Preset{"qwen3-0.6b", 1024, 28, 16, 8, 3072, 151936, 40960, 1000000.0f, "qwen3"},
};

}  // namespace

std::vector<std::string_view> synth_preset_names() {
  std::vector<std::string_view> names;
  for (const Preset& p : kPresets) names.push_back(p.name);
  return names;
}

Result<Hparams> synth_preset(std::string_view name) {
  for (const Preset& p : kPresets) {
    if (p.name != name) continue;
    Hparams hp;
    hp.n_embd = p.n_embd;
    hp.n_layer = p.n_layer;
    hp.n_head = p.n_head;
    hp.n_head_kv = p.n_head_kv;
    hp.n_ff = p.n_ff;
    hp.n_vocab = p.n_vocab;
    hp.n_ctx_train = p.n_ctx;
    hp.n_rot = 0;
    hp.rms_eps = 1e-5f;
    hp.rope_freq_base = p.rope_freq_base;
    hp.arch = std::string(p.arch);
    return hp;
  }
  std::string known;
  for (const Preset& p : kPresets) known += (known.empty() ? "" : ", ") + std::string(p.name);
  return error(ErrorCode::kInvalidArgument,
               "unknown preset '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace strata::model
