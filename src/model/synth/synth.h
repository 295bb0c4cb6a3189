// Random-weight models (Llama, Qwen2, Qwen3) of any shape, written as GGUF (`strata synth`). The
// weights have the statistics of a trained model's (unit-RMS activations through every layer), so
// speed measurements and numerics behave as with a real model of that shape and type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/arch/hparams.h"

namespace strata::model {

/// What to synthesize.
struct SynthSpec {
  std::string name = "synthetic-llama";  ///< general.name
  /// The shape and architecture. n_vocab 0 takes the size of `vocab_path`'s vocabulary; n_rot 0
  /// means the head size; rope_freq_scale is ignored.
  Hparams hparams;
  std::string type = "f16";  ///< a weight format: "f32", "q4_0", "q4_k_m", ... (synth_recipe.h)
  uint64_t seed = 0;         ///< same seed, same bytes
  /// A GGUF file whose `tokenizer.*` keys are copied; empty: a made-up SentencePiece
  /// vocabulary of n_vocab tokens.
  std::string vocab_path;
  int n_threads = 0;  ///< threads drawing and quantizing weights; 0: all cores
};

/// Names of the built-in shapes, smallest first ("tiny" is for tests).
std::vector<std::string_view> synth_preset_names();

/// The shape of a built-in preset; kInvalidArgument listing the known names when unknown.
Result<Hparams> synth_preset(std::string_view name);

/// Writes the model to `path`, one row block at a time: memory use is a few MiB per thread
/// whatever the model's size, and the output does not depend on n_threads. kInvalidArgument
/// for an unknown type, an inconsistent shape, or an n_vocab that disagrees with `vocab_path`;
/// kUnsupported for a type this build cannot quantize to (nothing is written then); file errors
/// as the OS reports them; a model larger than the disk's free space is kIo before anything is
/// written. A failed write leaves no file behind.
Status write_synthetic_model(const SynthSpec& spec, const std::string& path);

/// The architectures synth writes (hparams.arch).
std::vector<std::string> synth_architectures();

}  // namespace strata::model
