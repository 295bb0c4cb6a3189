// A loaded model: its file, architecture, hyperparameters, weights and tokenizer.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "core/status.h"
#include "gguf/file.h"
#include "memory/buffer.h"
#include "model/arch/architecture.h"
#include "model/tokenizer/tokenizer.h"

namespace strata::model {

class Model {
 public:
  /// Opens and validates `path`, reads the architecture, tokenizer and weights, placing the
  /// weights in `weights_type` (host: copied into huge pages where the system has them, else
  /// the file mapping is used in place).
  static Result<std::unique_ptr<Model>> load(const std::string& path,
                                             memory::BufferType& weights_type);
  /// Same, with each layer's weights placed where `placement` says (see WeightPlacement),
  /// layers their device cannot hold streamed as `stream` says (see WeightStream), and the
  /// host's own copy in `form` (see HostForm).
  static Result<std::unique_ptr<Model>> load(const std::string& path,
                                             const WeightPlacement& placement,
                                             const StreamOptions& stream = {},
                                             const HostForm& form = {});

  const gguf::File& file() const { return file_; }
  const Architecture& arch() const { return *arch_; }
  const Hparams& hparams() const { return hparams_; }
  const Weights& weights() const { return *weights_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  /// Bytes of all weight tensors.
  size_t weight_bytes() const;
  /// Streamed weights share slots, so only one session at a time may run over them: true
  /// when the caller now holds them (always true when nothing streams).
  bool acquire_stream() const {
    return weights_->stream.layers.empty() || !stream_in_use_.exchange(true);
  }
  void release_stream() const {
    if (!weights_->stream.layers.empty()) stream_in_use_.store(false);
  }

  /// The graph of one micro-batch over `kv` (pure metadata; check ctx.status() afterwards).
  ModelGraph build_graph(core::Context& ctx, const KvCacheTensors& kv, const BatchShape& shape,
                         const GraphOptions& options = {}) const {
    return arch_->build_graph(ctx, hparams_, *weights_, kv, shape, options);
  }

 private:
  static Result<std::unique_ptr<Model>> load_unguarded(const std::string& path,
                                                       const WeightPlacement& placement,
                                                       const StreamOptions& stream,
                                                       const HostForm& form);
  Model(gguf::File file, const Architecture& arch, Hparams hp, Tokenizer tok)
      : file_(std::move(file)), arch_(&arch), hparams_(std::move(hp)), tokenizer_(std::move(tok)) {}

  gguf::File file_;
  const Architecture* arch_;
  Hparams hparams_;
  Tokenizer tokenizer_;
  std::unique_ptr<Weights> weights_;
  mutable std::atomic<bool> stream_in_use_{false};
};

}  // namespace strata::model
