#include "model/llama_weights.h"

#include <cstring>
#include <string>

namespace strata::model {
namespace {

using core::Tensor;

struct Loader {
  const gguf::File& file;
  LlamaWeights& w;
  Status status;

  // Creates the tensor for `name` if the file has it with shape `ne` and a usable type.
  Tensor* get(const std::string& name, std::array<int64_t, 4> ne, bool required = true,
              bool f32_only = false) {
    if (!status.ok()) return nullptr;
    const gguf::TensorInfo* info = file.find_tensor(name);
    if (info == nullptr) {
      if (required) status = error(ErrorCode::kMalformed, "model: missing tensor '" + name + "'");
      return nullptr;
    }
    for (int i = 0; i < 4; ++i) {
      if (info->ne[i] != ne[i]) {
        status = error(ErrorCode::kMalformed,
                       "model: tensor '" + name + "' has shape [" + std::to_string(info->ne[0]) +
                           ", " + std::to_string(info->ne[1]) + "], expected [" +
                           std::to_string(ne[0]) + ", " + std::to_string(ne[1]) + "]");
        return nullptr;
      }
    }
    const bool usable = f32_only
                            ? info->type == core::Type::kF32
                            : core::is_computable(info->type) && info->type != core::Type::kI32;
    if (!usable) {
      status = error(ErrorCode::kUnsupported, "model: tensor '" + name + "' has type " +
                                                  std::string(core::type_name(info->type)) +
                                                  ", which this build cannot compute with");
      return nullptr;
    }
    Tensor* t = w.ctx.new_tensor(info->type, ne, name);
    t->flags |= core::kFlagWeight;
    return t;
  }
};

Status place_all(const gguf::File& file, LlamaWeights& w, memory::BufferType& type) {
  if (type.is_host()) {
    // Zero copy: the weights stay in the read-only mapping; no kernel writes a weight.
    auto buf = memory::wrap_host_memory(const_cast<uint8_t*>(file.data_section()),
                                        file.data_section_size());
    for (Tensor& t : w.ctx.tensors()) {
      const gguf::TensorInfo* info = file.find_tensor(t.name);
      STRATA_RETURN_IF_ERROR(buf->place(t, info->offset));
    }
    w.buffers.push_back(std::move(buf));
    return {};
  }
  size_t total = 0;
  const size_t align = type.alignment();
  for (const Tensor& t : w.ctx.tensors()) total += (t.nbytes() + align - 1) / align * align;
  auto buf = type.allocate(total);
  if (!buf.ok()) {
    return error(ErrorCode::kOutOfMemory, std::string(type.name()) + " needs " +
                                              memory::format_bytes(total) +
                                              " for the weights: " + buf.status().message());
  }
  size_t offset = 0;
  for (Tensor& t : w.ctx.tensors()) {
    const gguf::TensorInfo* info = file.find_tensor(t.name);
    STRATA_RETURN_IF_ERROR((*buf)->place(t, offset));
    STRATA_RETURN_IF_ERROR((*buf)->write(t, file.tensor_data(*info), 0, info->size));
    offset += (t.nbytes() + align - 1) / align * align;
  }
  w.buffers.push_back(std::move(buf).value());
  return {};
}

}  // namespace

Result<std::unique_ptr<LlamaWeights>> load_llama_weights(const gguf::File& file,
                                                         const LlamaHparams& hp,
                                                         memory::BufferType& type) {
  auto w = std::make_unique<LlamaWeights>();
  Loader ld{file, *w, {}};
  const int64_t e = hp.n_embd, ekv = hp.n_embd_kv(), ff = hp.n_ff, v = hp.n_vocab;
  w->tok_embd = ld.get("token_embd.weight", {e, v, 1, 1});
  w->output_norm = ld.get("output_norm.weight", {e, 1, 1, 1}, true, true);
  w->output = ld.get("output.weight", {e, v, 1, 1}, /*required=*/false);
  if (ld.status.ok() && w->output == nullptr) w->output = w->tok_embd;
  w->layers.resize(static_cast<size_t>(hp.n_layer));
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    LlamaLayerWeights& l = w->layers[static_cast<size_t>(il)];
    l.attn_norm = ld.get(p + "attn_norm.weight", {e, 1, 1, 1}, true, true);
    l.wq = ld.get(p + "attn_q.weight", {e, e, 1, 1});
    l.wk = ld.get(p + "attn_k.weight", {e, ekv, 1, 1});
    l.wv = ld.get(p + "attn_v.weight", {e, ekv, 1, 1});
    l.wo = ld.get(p + "attn_output.weight", {e, e, 1, 1});
    l.ffn_norm = ld.get(p + "ffn_norm.weight", {e, 1, 1, 1}, true, true);
    l.ffn_gate = ld.get(p + "ffn_gate.weight", {e, ff, 1, 1});
    l.ffn_up = ld.get(p + "ffn_up.weight", {e, ff, 1, 1});
    l.ffn_down = ld.get(p + "ffn_down.weight", {ff, e, 1, 1});
  }
  if (!ld.status.ok()) return ld.status;
  STRATA_RETURN_IF_ERROR(place_all(file, *w, type));
  return w;
}

}  // namespace strata::model
