// A loaded model: its file, hyperparameters, weights and tokenizer.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "gguf/file.h"
#include "memory/buffer.h"
#include "model/llama_hparams.h"
#include "model/llama_weights.h"
#include "model/tokenizer/tokenizer.h"

namespace strata::model {

class Model {
 public:
  /// Opens and validates `path`, reads the architecture, tokenizer and weights, placing the
  /// weights in `weights_type` (host: copied into huge pages where the system has them, else
  /// the file mapping is used in place).
  static Result<std::unique_ptr<Model>> load(const std::string& path,
                                             memory::BufferType& weights_type);
  /// Same, with each layer's weights placed where `placement` says (see WeightPlacement).
  static Result<std::unique_ptr<Model>> load(const std::string& path,
                                             const WeightPlacement& placement);

  const gguf::File& file() const { return file_; }
  const LlamaHparams& hparams() const { return hparams_; }
  const LlamaWeights& weights() const { return *weights_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  /// Bytes of all weight tensors.
  size_t weight_bytes() const;

 private:
  Model(gguf::File file, LlamaHparams hp, Tokenizer tok)
      : file_(std::move(file)), hparams_(hp), tokenizer_(std::move(tok)) {}

  gguf::File file_;
  LlamaHparams hparams_;
  Tokenizer tokenizer_;
  std::unique_ptr<LlamaWeights> weights_;
};

}  // namespace strata::model
