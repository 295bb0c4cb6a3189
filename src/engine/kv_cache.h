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
  struct Slot {
    core::Tensor* k = nullptr;
    core::Tensor* v = nullptr;
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

/// One sequence's cache. Cells [0, used) hold positions 0..used-1 in order; a micro-batch
/// appends after them.
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
  static constexpr int64_t kCellPad = 32;

  /// What the graph reads and writes: per layer its K and V (with paging, its slot's).
  const model::KvCacheTensors& tensors() const { return tensors_; }
  /// The slots and home of a paged cache; null when every layer is resident.
  KvPaging* paging() { return paging_.get(); }
  const KvPaging* paging() const { return paging_.get(); }
  /// The context size: how many cells append may fill.
  int64_t size() const { return capacity_; }
  int64_t used() const { return used_; }
  /// Cells attention reads: used() rounded up to kCellPad.
  int64_t view_cells() const {
    return std::min(static_cast<int64_t>(cell_pos_.size()),
                    (used_ + kCellPad - 1) / kCellPad * kCellPad);
  }
  /// Position held by a cell, or -1 when empty.
  int32_t cell_pos(int64_t cell) const { return cell_pos_[static_cast<size_t>(cell)]; }
  /// Bytes of device (or host) memory the cache holds: with paging, the resident slots.
  size_t bytes() const;

  /// Claims the next `n` cells for positions `first_pos`, first_pos + 1, ... and returns the
  /// first cell; kOutOfRange when the cache is full (nothing changes then).
  Result<int64_t> append(int64_t n, int32_t first_pos);
  /// Gives back the last `n` claimed cells (a failed run must not leave stale cells).
  void rollback(int64_t n);
  /// Empties every cell.
  void clear();

 private:
  core::Context ctx_;
  model::KvCacheTensors tensors_;
  std::vector<std::unique_ptr<memory::Buffer>> buffers_;
  std::unique_ptr<KvPaging> paging_;
  std::vector<int32_t> cell_pos_;  ///< every allocated cell, padding included
  int64_t capacity_ = 0;
  int64_t used_ = 0;
};

}  // namespace strata::engine
