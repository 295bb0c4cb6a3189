#include "engine/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace strata::engine {

Result<std::unique_ptr<KvCache>> KvCache::create(const model::LlamaHparams& hp,
                                                 const KvCacheConfig& config,
                                                 const Placement& placement) {
  if (config.n_cells <= 0)
    return error(ErrorCode::kInvalidArgument, "kv cache: size must be positive");
  for (core::Type t : {config.type_k, config.type_v}) {
    if (!core::is_computable(t) || t == core::Type::kI32 ||
        hp.n_embd_kv() % core::block_size(t) != 0) {
      return error(ErrorCode::kUnsupported,
                   "kv cache: type " + std::string(core::type_name(t)) + " is not supported");
    }
  }
  auto cache = std::unique_ptr<KvCache>(new KvCache());
  struct Group {
    memory::BufferType* type;
    std::vector<core::Tensor*> tensors;
    size_t bytes = 0;
    int64_t layers = 0;
  };
  std::vector<Group> groups;
  const int64_t cells = (config.n_cells + kCellPad - 1) / kCellPad * kCellPad;
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const std::string p = "cache_" + std::to_string(il);
    core::Tensor* k =
        cache->ctx_.new_tensor(config.type_k, {hp.n_embd_kv(), cells, 1, 1}, p + "_k");
    core::Tensor* v =
        cache->ctx_.new_tensor(config.type_v, {hp.n_embd_kv(), cells, 1, 1}, p + "_v");
    cache->tensors_.k.push_back(k);
    cache->tensors_.v.push_back(v);
    memory::BufferType& type = placement(il);
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return g.type == &type; });
    if (it == groups.end()) it = groups.insert(groups.end(), Group{&type, {}, 0, 0});
    const size_t align = type.alignment();
    for (core::Tensor* t : {k, v}) {
      it->tensors.push_back(t);
      it->bytes += (t->nbytes() + align - 1) / align * align;
    }
    ++it->layers;
  }
  for (Group& g : groups) {
    auto buf = g.type->allocate(g.bytes);
    if (!buf.ok()) {
      return error(ErrorCode::kOutOfMemory, "kv cache: " + std::string(g.type->name()) + " needs " +
                                                memory::format_bytes(g.bytes) + " for " +
                                                std::to_string(g.layers) + " layers of " +
                                                std::to_string(config.n_cells) +
                                                " cells: " + buf.status().message());
    }
    // Zeroed so cells a mask hides can never inject NaN or inf into attention.
    if ((*buf)->is_host()) std::memset((*buf)->base(), 0, (*buf)->size());
    size_t offset = 0;
    const size_t align = g.type->alignment();
    for (core::Tensor* t : g.tensors) {
      STRATA_RETURN_IF_ERROR((*buf)->place(*t, offset));
      offset += (t->nbytes() + align - 1) / align * align;
    }
    cache->buffers_.push_back(std::move(buf).value());
  }
  cache->cell_pos_.assign(static_cast<size_t>(cells), -1);
  cache->capacity_ = config.n_cells;
  return cache;
}

size_t KvCache::bytes() const {
  size_t total = 0;
  for (const auto& b : buffers_) total += b->size();
  return total;
}
Result<int64_t> KvCache::append(int64_t n, int32_t first_pos) {
  if (n < 0 || used_ + n > size()) {
    return error(ErrorCode::kOutOfRange, "context overflow: " + std::to_string(used_ + n) +
                                             " tokens exceed the context size of " +
                                             std::to_string(size()));
  }
  const int64_t first = used_;
  for (int64_t i = 0; i < n; ++i)
    cell_pos_[static_cast<size_t>(first + i)] = first_pos + static_cast<int32_t>(i);
  used_ += n;
  return first;
}

void KvCache::rollback(int64_t n) {
  for (int64_t i = 0; i < n && used_ > 0; ++i) cell_pos_[static_cast<size_t>(--used_)] = -1;
}

void KvCache::clear() {
  std::fill(cell_pos_.begin(), cell_pos_.end(), -1);
  used_ = 0;
}

}  // namespace strata::engine
