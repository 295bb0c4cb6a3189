#include "engine/kv_cache.h"

#include <cstring>
#include <string>

namespace strata::engine {

Result<std::unique_ptr<KvCache>> KvCache::create(const model::LlamaHparams& hp,
                                                 const KvCacheConfig& config,
                                                 memory::BufferType& type) {
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
  size_t total = 0;
  const size_t align = type.alignment();
  auto round = [align](size_t n) { return (n + align - 1) / align * align; };
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const std::string p = "cache_" + std::to_string(il);
    core::Tensor* k =
        cache->ctx_.new_tensor(config.type_k, {hp.n_embd_kv(), config.n_cells, 1, 1}, p + "_k");
    core::Tensor* v =
        cache->ctx_.new_tensor(config.type_v, {hp.n_embd_kv(), config.n_cells, 1, 1}, p + "_v");
    cache->tensors_.k.push_back(k);
    cache->tensors_.v.push_back(v);
    total += round(k->nbytes()) + round(v->nbytes());
  }
  auto buf = type.allocate(total);
  if (!buf.ok()) {
    return error(ErrorCode::kOutOfMemory, "kv cache: " + std::string(type.name()) + " needs " +
                                              memory::format_bytes(total) + " for " +
                                              std::to_string(config.n_cells) +
                                              " cells: " + buf.status().message());
  }
  cache->buffer_ = std::move(buf).value();
  // Zeroed so cells a mask hides can never inject NaN or inf into attention.
  if (cache->buffer_->is_host()) std::memset(cache->buffer_->base(), 0, cache->buffer_->size());
  size_t offset = 0;
  for (core::Tensor& t : cache->ctx_.tensors()) {
    STRATA_RETURN_IF_ERROR(cache->buffer_->place(t, offset));
    offset += round(t.nbytes());
  }
  cache->cell_pos_.assign(static_cast<size_t>(config.n_cells), -1);
  return cache;
}

size_t KvCache::bytes() const {
  return buffer_ ? buffer_->size() : 0;
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
