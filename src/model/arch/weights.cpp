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

struct Group {
  std::vector<Tensor*> tensors;
  std::vector<int64_t> tensor_layers;
  std::vector<int64_t> layers;
  size_t bytes = 0;
};

// Writes the file's bytes of `t` into its placement, in `form` where that applies (see HostForm).
Status write_weight(const gguf::File& file, Weights& w, memory::Buffer& buf, Tensor& t,
                    const HostForm* form) {
  const gguf::TensorInfo* info = file.find_tensor(source_name(t, w));
  const bool may_convert = form != nullptr && form->type && &t != w.tok_embd;
  const core::Type to = may_convert ? form->type(t.type, t.ne) : t.type;
  if (to == t.type) return buf.write(t, file.tensor_data(*info), 0, info->size);
  // Same bytes per row and block in either type, so the placement stays as it is. Host memory
  // takes the converted bytes in place, with no copy in between.
  void* dst = t.nbytes() == info->size ? buf.writable_data(t) : nullptr;
  std::vector<uint8_t> converted(dst != nullptr ? 0 : info->size);
  if (dst == nullptr) dst = converted.data();
  STRATA_RETURN_IF_ERROR(
      form->convert(t.type, to, file.tensor_data(*info), dst, t.nrows(), t.ne[0]));
  t.type = to;
  return converted.empty() ? Status{} : buf.write(t, converted.data(), 0, converted.size());
}

// One allocation of `type` holding `tensors`, each written from the file (in `form`, when set).
Status place_resident(const gguf::File& file, Weights& w, memory::BufferType& type,
                      const std::vector<Tensor*>& tensors, size_t bytes, size_t n_layers,
                      const HostForm* form = nullptr) {
  if (tensors.empty()) return {};
  auto buf = type.allocate(bytes);
  if (!buf.ok()) {
    return error(ErrorCode::kOutOfMemory,
                 std::string(type.name()) + " needs " + memory::format_bytes(bytes) + " for " +
                     std::to_string(n_layers) + " layers: " + buf.status().message());
  }
  size_t offset = 0;
  for (Tensor* t : tensors) {
    STRATA_RETURN_IF_ERROR((*buf)->place_split(*t, offset, tensor_split(*t, w.find(t)->split)));
    STRATA_RETURN_IF_ERROR(write_weight(file, w, **buf, *t, form));
    offset += aligned(t->nbytes(), type.alignment());
  }
  w.buffers.push_back(std::move(buf).value());
  return {};
}

// Whether a group's block layers stream, and then how many slots they get (0: they don't).
int slots_for(const memory::BufferType& type, const Group& g,
              const std::vector<size_t>& layer_bytes, size_t resident_bytes, size_t slot_bytes,
              const StreamOptions& opts) {
  const auto n = static_cast<int>(layer_bytes.size());
  if (!opts.enabled || n == 0) return 0;
  if (opts.slots > 0) return std::min(opts.slots, n);
  const size_t free = type.free_bytes();
  if (free >= g.bytes) return 0;  // it fits
  const size_t left = free > resident_bytes ? free - resident_bytes : 0;
  const auto fit = static_cast<int>(std::min<size_t>(left / 2 / slot_bytes, SIZE_MAX / 2));
  return std::clamp(fit, 2, n);
}

// Places a group whose block layers stream: the other tensors resident, each block layer's
// tensors at the same offsets in the slot it is given in turn.
Status place_streamed(const gguf::File& file, Weights& w, memory::BufferType& type, const Group& g,
                      int64_t n_layer, const StreamOptions& opts, bool* streamed) {
  *streamed = false;
  std::vector<Tensor*> resident;
  size_t resident_bytes = 0;
  std::vector<WeightStream::Layer> layers;
  std::vector<size_t> layer_bytes;
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    Tensor* t = g.tensors[i];
    const int64_t layer = g.tensor_layers[i];
    const size_t bytes = aligned(t->nbytes(), type.alignment());
    if (layer < 0 || layer >= n_layer) {
      resident.push_back(t);
      resident_bytes += bytes;
      continue;
    }
    if (layers.empty() || layers.back().layer != layer) {
      layers.push_back({layer, 0, 0, {}});
      layer_bytes.push_back(0);
    }
    const gguf::TensorInfo* info = file.find_tensor(source_name(*t, w));
    layers.back().pieces.push_back(
        {t, file.data_section_offset() + info->offset, info->size, file.tensor_data(*info)});
    layers.back().bytes += bytes;
    layer_bytes.back() += bytes;
  }
  const size_t slot_bytes =
      layer_bytes.empty() ? 0 : *std::max_element(layer_bytes.begin(), layer_bytes.end());
  const int slots = slots_for(type, g, layer_bytes, resident_bytes, slot_bytes, opts);
  if (slots == 0) return {};
  *streamed = true;
  STRATA_RETURN_IF_ERROR(
      place_resident(file, w, type, resident, resident_bytes, g.layers.size() - layers.size()));
  auto buf = type.allocate(static_cast<size_t>(slots) * slot_bytes);
  if (!buf.ok()) {
    return error(ErrorCode::kOutOfMemory,
                 std::string(type.name()) + " cannot hold " + std::to_string(slots) +
                     " weight slots of " + memory::format_bytes(slot_bytes) +
                     " to stream its layers through: " + buf.status().message());
  }
  const int first_slot = w.stream.n_slots;
  for (size_t i = 0; i < layers.size(); ++i) {
    WeightStream::Layer& l = layers[i];
    const int k = static_cast<int>(i) % slots;
    l.slot = first_slot + k;
    size_t offset = static_cast<size_t>(k) * slot_bytes;
    for (const WeightStream::Piece& p : l.pieces) {
      // A sharding buffer gives same-shaped tensors at one offset the same shards.
      STRATA_RETURN_IF_ERROR(
          (*buf)->place_split(*p.tensor, offset, tensor_split(*p.tensor, w.find(p.tensor)->split)));
      offset += aligned(p.tensor->nbytes(), type.alignment());
    }
  }
  w.buffers.push_back(std::move(buf).value());
  w.stream.path = file.path();
  w.stream.n_slots += slots;
  w.stream.slot_bytes = std::max(w.stream.slot_bytes, slot_bytes);
  for (WeightStream::Layer& l : layers) w.stream.layers.push_back(std::move(l));
  std::sort(w.stream.layers.begin(), w.stream.layers.end(),
            [](const auto& a, const auto& b) { return a.layer < b.layer; });
  return {};
}

Status place_all(const gguf::File& file, Weights& w, const WeightPlacement& placement,
                 int64_t n_layer, const StreamOptions& opts, const HostForm& form) {
  std::unique_ptr<memory::Buffer> mapping;
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
    it->second.tensor_layers.push_back(layer);
    if (it->second.layers.empty() || it->second.layers.back() != layer)
      it->second.layers.push_back(layer);
    it->second.bytes += aligned(t->nbytes(), type->alignment());
  }
  if (mapping) w.buffers.push_back(std::move(mapping));
  for (auto& [type, group] : groups) {
    bool streamed = false;
    // Host memory never streams, whether it holds its layers in huge pages or not.
    if (type != &memory::huge_page_buffer_type())
      STRATA_RETURN_IF_ERROR(place_streamed(file, w, *type, group, n_layer, opts, &streamed));
    if (!streamed) {
      // The huge-page copy is the host's own: it may take the host kernels' layout.
      const HostForm* host_form = type == &memory::huge_page_buffer_type() ? &form : nullptr;
      STRATA_RETURN_IF_ERROR(place_resident(file, w, *type, group.tensors, group.bytes,
                                            group.layers.size(), host_form));
    }
  }
  return {};
}

}  // namespace

const WeightStream::Layer* WeightStream::find(int64_t layer) const {
  for (const Layer& l : layers) {
    if (l.layer == layer) return &l;
  }
  return nullptr;
}

size_t WeightStream::bytes() const {
  size_t total = 0;
  for (const Layer& l : layers) {
    for (const Piece& p : l.pieces) total += p.size;
  }
  return total;
}

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
                                              const WeightPlacement& placement,
                                              const StreamOptions& stream, const HostForm& form) {
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
  STRATA_RETURN_IF_ERROR(place_all(file, *w, placement, hp.n_layer, stream, form));
  return w;
}

}  // namespace strata::model
