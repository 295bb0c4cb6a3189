#include "engine/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "memory/huge_page_buffer.h"
#include "meta/meta_buffer.h"

namespace strata::engine {
namespace {

// Where a placed slot tensor's bytes live for the pager: the tensor, or each member's shard
// under a tensor split. Split shards keep their rows side by side in the home (shard d's rows
// after those of shards 0..d-1, `cells` of each); mirrored shards are copies, read alike and
// written back once.
bool in_another_process(const core::Tensor& t) {
  return !static_cast<memory::Buffer*>(t.buffer)->is_host();
}

std::vector<KvPaging::Part> parts_of(core::Tensor& t, int64_t cells) {
  const meta::Sharded* s = meta::shards_of(t);
  if (s == nullptr) {
    return {{&t, static_cast<uint8_t*>(t.data), core::row_size(t.type, t.ne[0]), 0, true,
             in_another_process(t)}};
  }
  std::vector<KvPaging::Part> parts;
  size_t before = 0;  // bytes per cell of the shards before this one
  for (size_t d = 0; d < s->shard.size(); ++d) {
    core::Tensor& shard = *s->shard[d];
    const size_t row = core::row_size(shard.type, shard.ne[0]);
    const bool mirrored = s->axis < 0;
    parts.push_back({&shard, static_cast<uint8_t*>(shard.data), row,
                     mirrored ? 0 : before * static_cast<size_t>(cells), !mirrored || d == 0,
                     in_another_process(shard)});
    before += row;
  }
  return parts;
}

// Bytes a tensor of `bytes` takes in a buffer of `type`: tensors are placed at aligned offsets.
size_t padded(size_t bytes, const memory::BufferType& type) {
  const size_t align = type.alignment();
  return (bytes + align - 1) / align * align;
}

}  // namespace

Result<std::unique_ptr<KvCache>> KvCache::create(const model::Hparams& hp,
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
  const KvPagingConfig& paging = config.paging;
  if (paging.enabled() && !(paging.resident_fraction >= 0 && paging.resident_fraction <= 1)) {
    return error(ErrorCode::kInvalidArgument, "kv cache: resident share must be in (0, 1]");
  }
  // Layers whose cache goes to the same memory share one buffer.
  struct Group {
    memory::BufferType* type;
    std::vector<int64_t> layers;
    std::vector<core::Tensor*> tensors;
    size_t bytes = 0;
  };
  std::vector<Group> groups;
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    memory::BufferType& type = placement(il);
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return g.type == &type; });
    if (it == groups.end()) it = groups.insert(groups.end(), Group{&type, {}, {}, 0});
    it->layers.push_back(il);
  }
  const int64_t cells = (config.n_cells + kCellPad - 1) / kCellPad * kCellPad;
  auto new_pair = [&](Group& g, const std::string& name) {
    core::Tensor* k =
        cache->ctx_.new_tensor(config.type_k, {hp.n_embd_kv(), cells, 1, 1}, name + "_k");
    core::Tensor* v =
        cache->ctx_.new_tensor(config.type_v, {hp.n_embd_kv(), cells, 1, 1}, name + "_v");
    for (core::Tensor* t : {k, v}) {
      g.tensors.push_back(t);
      g.bytes += padded(t->nbytes(), *g.type);
    }
    return KvPaging::Slot{k, v};
  };
  cache->tensors_.k.assign(static_cast<size_t>(hp.n_layer), nullptr);
  cache->tensors_.v.assign(static_cast<size_t>(hp.n_layer), nullptr);
  if (paging.enabled()) cache->paging_ = std::make_unique<KvPaging>();
  KvPaging* pg = cache->paging_.get();
  if (pg != nullptr) pg->slot_of_layer.assign(static_cast<size_t>(hp.n_layer), -1);
  for (Group& g : groups) {
    if (pg == nullptr) {
      for (int64_t il : g.layers) {
        const auto pair = new_pair(g, "cache_" + std::to_string(il));
        cache->tensors_.k[static_cast<size_t>(il)] = pair.k;
        cache->tensors_.v[static_cast<size_t>(il)] = pair.v;
      }
      continue;
    }
    // Resident slots: a share of the group's layers, or as many as the bytes hold.
    const auto n = static_cast<int64_t>(g.layers.size());
    const size_t per_layer =
        padded(core::row_size(config.type_k, hp.n_embd_kv()) * static_cast<size_t>(cells),
               *g.type) +
        padded(core::row_size(config.type_v, hp.n_embd_kv()) * static_cast<size_t>(cells), *g.type);
    int64_t n_slots =
        paging.resident_fraction > 0
            ? static_cast<int64_t>(std::ceil(paging.resident_fraction * static_cast<double>(n)))
            : static_cast<int64_t>(paging.resident_bytes / per_layer);
    if (n_slots < 1) {
      return error(ErrorCode::kInvalidArgument,
                   "kv cache: " + memory::format_bytes(paging.resident_bytes) +
                       " resident holds no layer on " + std::string(g.type->name()) +
                       " (one layer of " + std::to_string(config.n_cells) + " cells needs " +
                       memory::format_bytes(per_layer) + ")");
    }
    n_slots = std::min(n_slots, n);
    const int first_slot = static_cast<int>(pg->slots.size());
    for (int64_t i = 0; i < n_slots; ++i) {
      pg->slots.push_back(new_pair(g, "kv_slot_" + std::to_string(pg->slots.size())));
    }
    for (int64_t i = 0; i < n; ++i) {
      const int slot = first_slot + static_cast<int>(i % n_slots);
      const auto il = static_cast<size_t>(g.layers[static_cast<size_t>(i)]);
      pg->slot_of_layer[il] = slot;
      cache->tensors_.k[il] = pg->slots[static_cast<size_t>(slot)].k;
      cache->tensors_.v[il] = pg->slots[static_cast<size_t>(slot)].v;
    }
  }
  for (Group& g : groups) {
    // Each token's attention reads every layer's cells in one pass, as decode reads weights:
    // on the plain host the cache takes huge pages where the system gives them (fewer TLB
    // misses, prefetchers running further ahead).
    memory::BufferType* type = g.type;
    if (type == &memory::host_buffer_type() && memory::huge_pages_supported()) {
      type = &memory::huge_page_buffer_type();
    }
    auto buf = type->allocate(g.bytes);
    if (!buf.ok()) {
      return error(
          ErrorCode::kOutOfMemory,
          "kv cache: " + std::string(g.type->name()) + " needs " + memory::format_bytes(g.bytes) +
              " for " +
              (pg != nullptr ? std::to_string(g.tensors.size() / 2) + " resident of " : "") +
              std::to_string(g.layers.size()) + " layers of " + std::to_string(config.n_cells) +
              " cells: " + buf.status().message());
    }
    // Split across devices by KV heads, like the K and V projections that fill them.
    memory::TensorSplit by_head;
    by_head.axis = 0;
    by_head.granule = hp.head_dim();
    size_t offset = 0;
    for (core::Tensor* t : g.tensors) {
      STRATA_RETURN_IF_ERROR((*buf)->place_split(*t, offset, by_head));
      offset += padded(t->nbytes(), *g.type);
    }
    // Zeroed so cells a mask hides can never inject NaN or inf into attention.
    if ((*buf)->is_host()) (*buf)->zero();
    cache->buffers_.push_back(std::move(buf).value());
  }
  if (pg != nullptr) {
    pg->row_k = core::row_size(config.type_k, hp.n_embd_kv());
    pg->row_v = core::row_size(config.type_v, hp.n_embd_kv());
    pg->cells = cells;
    for (KvPaging::Slot& slot : pg->slots) {
      slot.k_parts = parts_of(*slot.k, cells);
      slot.v_parts = parts_of(*slot.v, cells);
    }
    const size_t home_bytes = pg->layer_bytes() * static_cast<size_t>(hp.n_layer);
    auto home = paging.home_file.empty() ? KvHome::in_memory(home_bytes)
                                         : KvHome::in_file(paging.home_file, home_bytes);
    if (!home.ok()) return home.status();
    pg->home = std::move(home).value();
  }
  cache->cells_ = KvCells(config.n_cells);
  return cache;
}

size_t KvCache::bytes() const {
  size_t total = 0;
  for (const auto& b : buffers_) total += b->size();
  return total;
}
}  // namespace strata::engine
