// Which KV cache cell holds which token: a position and the set of sequences that see it.
//
// Cells are handed out in pages of kPage cells, one sequence's consecutive positions per page
// (position p of a sequence lives at offset p % kPage of the page its block p / kPage maps to),
// and a sequence's pages are taken in increasing order where the cache allows. Attention sums
// over cells in cell order, in lanes and chunks of 16 and 32 cells; so a sequence whose pages
// keep that order sees exactly the sums it would see alone in the cache (masked cells add
// exact zeros): batching sequences together changes none of their results.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"

namespace strata::engine {

class KvCells {
 public:
  static constexpr int kMaxSeqs = 64;
  static constexpr int64_t kPage = 32;

  /// Holds at most `n_cells` tokens, in cells rounded up to whole pages.
  explicit KvCells(int64_t n_cells);

  /// Cells allocated (whole pages).
  int64_t size() const { return static_cast<int64_t>(pos_.size()); }
  /// Tokens it may hold at once.
  int64_t capacity() const { return capacity_; }
  /// Cells holding at least one sequence's token.
  int64_t used() const { return used_; }
  /// Cells attention must read: up to the last page in use.
  int64_t view_cells() const;
  int32_t pos(int64_t cell) const { return pos_[static_cast<size_t>(cell)]; }
  bool has(int64_t cell, int32_t seq) const {
    return (seqs_[static_cast<size_t>(cell)] >> seq) & 1u;
  }

  /// A cell for each (seq, pos) token, in order; kOutOfRange when the cache has no room and
  /// kInvalidArgument for a sequence id out of range or a position its sequence already holds
  /// (nothing changes then).
  Result<std::vector<int32_t>> claim(std::span<const int32_t> seqs, std::span<const int32_t> pos);
  /// Undoes claim(): the cells no longer hold those tokens of those sequences.
  void release(std::span<const int32_t> cells, std::span<const int32_t> seqs);

  /// Forgets positions [p0, p1) of `seq` (p1 < 0: to the end); seq < 0: of every sequence.
  void seq_rm(int32_t seq, int32_t p0 = 0, int32_t p1 = -1);
  /// `dst` sees what `src` holds in [p0, p1) (shared cells, nothing copied).
  void seq_cp(int32_t src, int32_t dst, int32_t p0 = 0, int32_t p1 = -1);
  /// Forgets every sequence but `seq`.
  void seq_keep(int32_t seq);
  /// The largest position `seq` holds, or -1.
  int32_t seq_pos_max(int32_t seq) const;
  /// Empties every cell.
  void clear();

 private:
  // Drops `seq` from `cell`; frees the cell (and counts its page down) when none is left.
  void drop(int64_t cell, int32_t seq);
  // The page block `block` of `seq` maps to, or -1.
  int32_t page_of(int32_t seq, int64_t block) const;
  // A free page, preferring the lowest one above `after`.
  int32_t free_page(int32_t after) const;

  std::vector<int32_t> pos_;                       // per cell, -1 when empty
  std::vector<uint64_t> seqs_;                     // per cell, a bit per sequence
  std::vector<int32_t> page_used_;                 // cells in use per page
  std::vector<std::vector<int32_t>> block_pages_;  // per sequence: page of each block, or -1
  int64_t used_ = 0;
  int64_t capacity_ = 0;
};

}  // namespace strata::engine
