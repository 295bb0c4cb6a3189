// The KV cache: per layer K and V rows, one per cell, and the position each cell holds.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/context.h"
#include "core/status.h"
#include "memory/buffer.h"
#include "model/llama_graph.h"
#include "model/llama_hparams.h"

namespace strata::engine {

struct KvCacheConfig {
  int64_t n_cells = 0;  ///< context size in tokens
  core::Type type_k = core::Type::kF16;
  core::Type type_v = core::Type::kF16;
};

/// One sequence's cache. Cells [0, used) hold positions 0..used-1 in order; a micro-batch
/// appends after them.
class KvCache {
 public:
  /// Where each layer's K and V live.
  using Placement = std::function<memory::BufferType&(int64_t layer)>;

  static Result<std::unique_ptr<KvCache>> create(const model::LlamaHparams& hp,
                                                 const KvCacheConfig& config,
                                                 const Placement& placement);

  /// Cells are allocated, and attention reads them, in multiples of this many. The extra
  /// cells are zero and masked; they exist so every attention row has a length whose
  /// summation order is llama.cpp's (it pads its KV view the same way; see dot_float.cpp).
  static constexpr int64_t kCellPad = 32;

  const model::KvCacheTensors& tensors() const { return tensors_; }
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
  std::vector<int32_t> cell_pos_;  ///< every allocated cell, padding included
  int64_t capacity_ = 0;
  int64_t used_ = 0;
};

}  // namespace strata::engine
