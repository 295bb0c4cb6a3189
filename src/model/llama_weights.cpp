#include "model/llama_weights.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "memory/huge_page_buffer.h"

namespace strata::model {
namespace {

using core::Tensor;

struct Loader {
  const gguf::File& file;
  LlamaWeights& w;
  Status status;
  int64_t layer = -1;
  std::vector<std::pair<Tensor*, int64_t>> layer_of;  // every tensor and its layer

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
    layer_of.emplace_back(t, layer);
    return t;
  }
};

size_t aligned(size_t n, size_t align) {
  return (n + align - 1) / align * align;
}

// The file name a weight tensor is read from (a tied output reads the embeddings).
const std::string& source_name(const Tensor& t, const LlamaWeights& w) {
  return &t == w.output && w.output->name != "output.weight" ? w.tok_embd->name : t.name;
}

Status place_all(const gguf::File& file, LlamaWeights& w, const Loader& ld,
                 const WeightPlacement& placement) {
  std::unique_ptr<memory::Buffer> mapping;
  struct Group {
    std::vector<Tensor*> tensors;
    std::vector<int64_t> layers;
    size_t bytes = 0;
  };
  std::vector<std::pair<memory::BufferType*, Group>> groups;
  size_t host_bytes = 0;
  for (const auto& [t, layer] : ld.layer_of) {
    if (&placement(layer) == &memory::host_buffer_type()) host_bytes += t->nbytes();
  }
  const bool huge = memory::copy_to_huge_pages_pays(host_bytes);
  for (const auto& [t, layer] : ld.layer_of) {
    memory::BufferType* type = &placement(layer);
    const gguf::TensorInfo* info = file.find_tensor(source_name(*t, w));
    if (type == &memory::host_buffer_type() && huge) {
      // Decode streams every weight once per token: copied into huge pages it runs faster than
      // from the page cache's 4 KiB pages (fewer TLB misses, prefetchers not stopped at every
      // page), which pays for the one-off copy when the model fits easily in memory.
      type = &memory::huge_page_buffer_type();
    }
    if (type == &memory::host_buffer_type()) {
      // Zero copy: the weights stay in the read-only mapping; no kernel writes a weight. Other
      // host-addressable types (a partition's budget) get their own copy, so they hold it.
      if (!mapping) {
        mapping = memory::wrap_host_memory(const_cast<uint8_t*>(file.data_section()),
                                           file.data_section_size());
      }
      STRATA_RETURN_IF_ERROR(mapping->place(*t, info->offset));
      continue;
    }
    auto it = std::find_if(groups.begin(), groups.end(), [&](auto& g) { return g.first == type; });
    if (it == groups.end()) it = groups.insert(groups.end(), {type, Group{}});
    it->second.tensors.push_back(t);
    if (it->second.layers.empty() || it->second.layers.back() != layer)
      it->second.layers.push_back(layer);
    it->second.bytes += aligned(t->nbytes(), type->alignment());
  }
  if (mapping) w.buffers.push_back(std::move(mapping));
  for (auto& [type, group] : groups) {
    auto buf = type->allocate(group.bytes);
    if (!buf.ok()) {
      return error(ErrorCode::kOutOfMemory, std::string(type->name()) + " needs " +
                                                memory::format_bytes(group.bytes) + " for " +
                                                std::to_string(group.layers.size()) +
                                                " layers: " + buf.status().message());
    }
    size_t offset = 0;
    for (Tensor* t : group.tensors) {
      const gguf::TensorInfo* info = file.find_tensor(source_name(*t, w));
      STRATA_RETURN_IF_ERROR((*buf)->place(*t, offset));
      STRATA_RETURN_IF_ERROR((*buf)->write(*t, file.tensor_data(*info), 0, info->size));
      offset += aligned(t->nbytes(), type->alignment());
    }
    w.buffers.push_back(std::move(buf).value());
  }
  return {};
}

}  // namespace

Result<std::unique_ptr<LlamaWeights>> load_llama_weights(const gguf::File& file,
                                                         const LlamaHparams& hp,
                                                         const WeightPlacement& placement) {
  auto w = std::make_unique<LlamaWeights>();
  Loader ld{file, *w, {}};
  const int64_t e = hp.n_embd, ekv = hp.n_embd_kv(), ff = hp.n_ff, v = hp.n_vocab;
  ld.layer = -1;
  w->tok_embd = ld.get("token_embd.weight", {e, v, 1, 1});
  w->layers.resize(static_cast<size_t>(hp.n_layer));
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    LlamaLayerWeights& l = w->layers[static_cast<size_t>(il)];
    ld.layer = il;
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
  ld.layer = hp.n_layer;
  w->output_norm = ld.get("output_norm.weight", {e, 1, 1, 1}, true, true);
  w->output = ld.get("output.weight", {e, v, 1, 1}, /*required=*/false);
  if (ld.status.ok() && w->output == nullptr) {
    // Tied embeddings: the output layer reads the same bytes. When it is placed apart from the
    // input it gets its own copy, so it never pulls the output matmul back to the input's device.
    if (&placement(hp.n_layer) == &placement(-1)) {
      w->output = w->tok_embd;
    } else {
      w->output = w->ctx.new_tensor(w->tok_embd->type, w->tok_embd->ne, "output.weight (tied)");
      w->output->flags |= core::kFlagWeight;
      ld.layer_of.emplace_back(w->output, hp.n_layer);
    }
  }
  if (!ld.status.ok()) return ld.status;
  STRATA_RETURN_IF_ERROR(place_all(file, *w, ld, placement));
  return w;
}

}  // namespace strata::model
