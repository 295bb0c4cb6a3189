#include "model/model.h"

namespace strata::model {

Result<std::unique_ptr<Model>> Model::load(const std::string& path,
                                           memory::BufferType& weights_type) {
  return load(path, [&weights_type](int64_t) -> memory::BufferType& { return weights_type; });
}

Result<std::unique_ptr<Model>> Model::load(const std::string& path,
                                           const WeightPlacement& placement,
                                           const StreamOptions& stream, const HostForm& form) {
  // Whatever was loaded is released as the failed load unwinds.
  return out_of_memory_as_error("loading the model",
                                [&] { return load_unguarded(path, placement, stream, form); });
}

Result<std::unique_ptr<Model>> Model::load_unguarded(const std::string& path,
                                                     const WeightPlacement& placement,
                                                     const StreamOptions& stream,
                                                     const HostForm& form) {
  auto file = gguf::File::open(path);
  if (!file.ok()) return file.status();
  auto hp = read_hparams(*file);
  if (!hp.ok()) return hp.status();
  const gguf::TensorInfo* embd = file->find_tensor("token_embd.weight");
  if (embd == nullptr)
    return error(ErrorCode::kMalformed, "model: missing tensor 'token_embd.weight'");
  hp->n_vocab = embd->ne[1];
  auto tok = Tokenizer::from_gguf(*file);
  if (!tok.ok()) return tok.status();
  if (tok->n_vocab() != hp->n_vocab) {
    return error(ErrorCode::kMalformed, "model: tokenizer has " + std::to_string(tok->n_vocab()) +
                                            " tokens but the embedding has " +
                                            std::to_string(hp->n_vocab) + " rows");
  }
  const Architecture* arch = find_architecture(hp->arch);
  std::unique_ptr<Model> m(
      new Model(std::move(file).value(), *arch, std::move(hp).value(), std::move(tok).value()));
  auto weights = load_weights(m->file_, m->hparams_, placement, stream, form);
  if (!weights.ok()) return weights.status();
  m->weights_ = std::move(weights).value();
  return m;
}

size_t Model::weight_bytes() const {
  size_t total = 0;
  for (const core::Tensor& t : weights_->ctx.tensors()) total += t.nbytes();
  return total;
}

}  // namespace strata::model
