#include "model/arch/weights.h"

#include "model/arch/architecture.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "memory/huge_page_buffer.h"

namespace strata::model {
namespace {

using core::Tensor;

std::string shape_text(const std::array<int64_t, 4>& ne) {
  int dims = 4;
  while (dims > 1 && ne[static_cast<size_t>(dims - 1)] == 1) --dims;
  std::string s = "[";
  for (int i = 0; i < dims; ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(ne[static_cast<size_t>(i)]);
  }
  return s + "]";
}

size_t aligned(size_t n, size_t align) {
  return (n + align - 1) / align * align;
}

// The file name a weight tensor is read from (a tied output reads the embeddings).
const std::string& source_name(const Tensor& t, const Weights& w) {
  return &t == w.output && w.output->name != "output.weight" ? w.tok_embd->name : t.name;
}

// How a weight divides between the devices of a sharding buffer: rows are a matrix's ne[1]
// (a vector's ne[0]), columns its ne[0].
memory::TensorSplit tensor_split(const Tensor& t, const WeightSplit& s) {
  memory::TensorSplit out;
  out.segments = s.segments;
  out.granule = s.granule;
  if (s.axis == SplitAxis::kRows) out.axis = t.ne[1] > 1 ? 1 : 0;
  if (s.axis == SplitAxis::kColumns) out.axis = 0;
  return out;
}

Status place_all(const gguf::File& file, Weights& w, const WeightPlacement& placement) {
  std::unique_ptr<memory::Buffer> mapping;
  struct Group {
    std::vector<Tensor*> tensors;
    std::vector<int64_t> layers;
    size_t bytes = 0;
  };
  std::vector<std::pair<memory::BufferType*, Group>> groups;
  size_t host_bytes = 0;
  for (const auto& [t, layer, split] : w.info) {
    if (&placement(layer) == &memory::host_buffer_type()) host_bytes += t->nbytes();
  }
  const bool huge = memory::copy_to_huge_pages_pays(host_bytes);
  for (const auto& [t, layer, split] : w.info) {
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
      STRATA_RETURN_IF_ERROR((*buf)->place_split(*t, offset, tensor_split(*t, w.find(t)->split)));
      STRATA_RETURN_IF_ERROR((*buf)->write(*t, file.tensor_data(*info), 0, info->size));
      offset += aligned(t->nbytes(), type->alignment());
    }
    w.buffers.push_back(std::move(buf).value());
  }
  return {};
}

}  // namespace

const Weights::Info* Weights::find(const core::Tensor* t) const {
  for (const Info& i : info) {
    if (i.tensor == t) return &i;
  }
  return nullptr;
}

int64_t WeightLoader::block_size_of(const std::string& name) const {
  const gguf::TensorInfo* info = file_.find_tensor(name);
  return info != nullptr && core::is_computable(info->type) ? core::block_size(info->type) : 1;
}

std::string WeightLoader::blk(const char* what, const char* kind) const {
  return "blk." + std::to_string(layer_) + "." + what + "." + kind;
}

core::Tensor* WeightLoader::require(const std::string& name, std::array<int64_t, 4> ne,
                                    WeightSplit split) {
  return get(name, ne, true, false, std::move(split));
}

core::Tensor* WeightLoader::optional(const std::string& name, std::array<int64_t, 4> ne,
                                     WeightSplit split) {
  return get(name, ne, false, false, std::move(split));
}

core::Tensor* WeightLoader::vector_f32(const std::string& name, int64_t n, bool required,
                                       WeightSplit split) {
  return get(name, {n, 1, 1, 1}, required, true, std::move(split));
}

core::Tensor* WeightLoader::get(const std::string& name, std::array<int64_t, 4> ne, bool required,
                                bool f32_only, WeightSplit split) {
  if (!status_.ok()) return nullptr;
  const gguf::TensorInfo* info = file_.find_tensor(name);
  if (info == nullptr) {
    if (required) status_ = error(ErrorCode::kMalformed, "model: missing tensor '" + name + "'");
    return nullptr;
  }
  std::array<int64_t, 4> have{};
  for (size_t i = 0; i < 4; ++i) have[i] = info->ne[i];
  if (have != ne) {
    status_ = error(ErrorCode::kMalformed, "model: tensor '" + name + "' has shape " +
                                               shape_text(have) + ", expected " + shape_text(ne));
    return nullptr;
  }
  const bool usable = f32_only ? info->type == core::Type::kF32
                               : core::is_computable(info->type) && info->type != core::Type::kI32;
  if (!usable) {
    status_ = error(ErrorCode::kUnsupported, "model: tensor '" + name + "' has type " +
                                                 std::string(core::type_name(info->type)) +
                                                 ", which this build cannot compute with");
    return nullptr;
  }
  core::Tensor* t = w_.ctx.new_tensor(info->type, ne, name);
  t->flags |= core::kFlagWeight;
  w_.info.push_back({t, layer_, std::move(split)});
  return t;
}

Result<std::unique_ptr<Weights>> load_weights(const gguf::File& file, const Hparams& hp,
                                              const WeightPlacement& placement) {
  const Architecture* arch = find_architecture(hp.arch);
  if (arch == nullptr) {
    return error(ErrorCode::kUnsupported, "model: unknown architecture '" + hp.arch + "'");
  }
  auto w = std::make_unique<Weights>();
  WeightLoader ld(file, *w);
  w->layers.resize(static_cast<size_t>(hp.n_layer));
  ld.at_layer(-1);
  w->tok_embd = ld.require("token_embd.weight", {hp.n_embd, hp.n_vocab, 1, 1}, {});
  arch->declare_weights(ld, hp, *w);
  ld.at_layer(hp.n_layer);
  w->output_norm = ld.vector_f32("output_norm.weight", hp.n_embd);
  w->output =
      ld.optional("output.weight", {hp.n_embd, hp.n_vocab, 1, 1}, {SplitAxis::kRows, {}, 1});
  if (ld.status().ok() && w->output == nullptr) {
    // Tied embeddings: the output layer reads the same bytes. When it is placed apart from the
    // input it gets its own copy, so it never pulls the output matmul back to the input's device.
    if (&placement(hp.n_layer) == &placement(-1)) {
      w->output = w->tok_embd;
    } else {
      w->output = w->ctx.new_tensor(w->tok_embd->type, w->tok_embd->ne, "output.weight (tied)");
      w->output->flags |= core::kFlagWeight;
      w->info.push_back({w->output, hp.n_layer, {SplitAxis::kRows, {}, 1}});
    }
  }
  if (!ld.status().ok()) return ld.status();
  STRATA_RETURN_IF_ERROR(place_all(file, *w, placement));
  return w;
}

}  // namespace strata::model
