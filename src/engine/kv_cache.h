// The KV cache: per layer K and V rows, one per cell, and the position each cell holds.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/status.h"
#include "engine/kv_cells.h"
#include "engine/kv_home.h"
#include "memory/buffer.h"
#include "model/arch/graph.h"
#include "model/arch/hparams.h"

namespace strata::engine {

/// KV paging: each device keeps only some layers' K and V resident (in slots), the whole
/// cache lives in a home tier, and a pager moves layers in and out while compute runs.
struct KvPagingConfig {
  /// Resident share of each device's layers, in (0, 1]; 0 to size by resident_bytes.
  double resident_fraction = 0;
  /// Resident KV bytes per device (used when resident_fraction is 0).
  size_t resident_bytes = 0;
  /// The home: a file at this path, or host memory when empty.
  std::string home_file;
  bool enabled() const { return resident_fraction > 0 || resident_bytes > 0; }
};

struct KvCacheConfig {
  int64_t n_cells = 0;  ///< context size in tokens
  core::Type type_k = core::Type::kF16;
  core::Type type_v = core::Type::kF16;
  KvPagingConfig paging;
};

/// The resident slots of a paged cache and its home, for the pager. Layer l's K and V are
/// read and written by the graph in slots[slot_of_layer[l]]; its cells are kept in the home
/// at home_k(l) and home_v(l), one row per cell.
struct KvPaging {
  /// Where a slot's K (or V) bytes live: the tensor itself, or under a tensor split each
  /// member's shard, which pages its own KV heads. A part's rows (`row` bytes per cell) are
  /// kept in the home from `home_offset` within the layer's K (or V) region. A part in
  /// memory of another process (an MPI rank) is read and written through its buffer.
  struct Part {
    core::Tensor* tensor = nullptr;  ///< the slot's tensor or the shard
    uint8_t* data = nullptr;
    size_t row = 0;
    size_t home_offset = 0;
    bool write_back = true;  ///< false for every copy of a mirrored shard but the first
    bool remote = false;     ///< the host cannot address `data`
  };
  struct Slot {
    core::Tensor* k = nullptr;
    core::Tensor* v = nullptr;
    std::vector<Part> k_parts, v_parts;
  };
  std::vector<Slot> slots;
  std::vector<int> slot_of_layer;
  std::unique_ptr<KvHome> home;
  size_t row_k = 0, row_v = 0;  ///< bytes per cell
  int64_t cells = 0;            ///< cells per layer
  size_t home_k(int64_t layer) const { return static_cast<size_t>(layer) * layer_bytes(); }
  size_t home_v(int64_t layer) const { return home_k(layer) + row_k * static_cast<size_t>(cells); }
  size_t layer_bytes() const { return (row_k + row_v) * static_cast<size_t>(cells); }
};

/// The KV cache: per layer K and V tensors of one row per cell, and which cells hold which
/// sequences' tokens (KvCells).
class KvCache {
 public:
  /// Where each layer's K and V live.
  using Placement = std::function<memory::BufferType&(int64_t layer)>;

  static Result<std::unique_ptr<KvCache>> create(const model::Hparams& hp,
                                                 const KvCacheConfig& config,
                                                 const Placement& placement);

  /// Cells are allocated, and attention reads them, in multiples of this many. The extra
  /// cells are zero and masked; they exist so every attention row has a length whose
  /// summation order is llama.cpp's (it pads its KV view the same way; see dot_float.cpp).
  static constexpr int64_t kCellPad = KvCells::kPage;

  /// What the graph reads and writes: per layer its K and V (with paging, its slot's).
  const model::KvCacheTensors& tensors() const { return tensors_; }
  /// The slots and home of a paged cache; null when every layer is resident.
  KvPaging* paging() { return paging_.get(); }
  const KvPaging* paging() const { return paging_.get(); }
  /// The context size: how many tokens the cells may hold.
  int64_t size() const { return cells_.capacity(); }
  int64_t used() const { return cells_.used(); }
  /// Cells attention reads: up to the last page in use (a multiple of kCellPad).
  int64_t view_cells() const { return cells_.view_cells(); }
  /// Position held by a cell, or -1 when empty.
  int32_t cell_pos(int64_t cell) const { return cells_.pos(cell); }
  /// Which cell holds which sequence's token.
  KvCells& cells() { return cells_; }
  const KvCells& cells() const { return cells_; }
  /// Bytes of device (or host) memory the cache holds: with paging, the resident slots.
  size_t bytes() const;
  /// Empties every cell.
  void clear() { cells_.clear(); }

 private:
  core::Context ctx_;
  model::KvCacheTensors tensors_;
  std::vector<std::unique_ptr<memory::Buffer>> buffers_;
  std::unique_ptr<KvPaging> paging_;
  KvCells cells_{0};
};

}  // namespace strata::engine
