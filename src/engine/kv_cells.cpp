#include "engine/kv_cells.h"

#include <algorithm>
#include <string>

namespace strata::engine {

KvCells::KvCells(int64_t n_cells) : capacity_(n_cells) {
  const int64_t pages = (n_cells + kPage - 1) / kPage;
  pos_.assign(static_cast<size_t>(pages * kPage), -1);
  seqs_.assign(pos_.size(), 0);
  page_used_.assign(static_cast<size_t>(pages), 0);
  block_pages_.resize(kMaxSeqs);
}

int64_t KvCells::view_cells() const {
  for (auto p = static_cast<int64_t>(page_used_.size()) - 1; p >= 0; --p) {
    if (page_used_[static_cast<size_t>(p)] > 0) return (p + 1) * kPage;
  }
  return 0;
}

int32_t KvCells::page_of(int32_t seq, int64_t block) const {
  const std::vector<int32_t>& pages = block_pages_[static_cast<size_t>(seq)];
  return block < static_cast<int64_t>(pages.size()) ? pages[static_cast<size_t>(block)] : -1;
}

int32_t KvCells::free_page(int32_t after) const {
  const auto n = static_cast<int32_t>(page_used_.size());
  for (int32_t p = after + 1; p < n; ++p) {
    if (page_used_[static_cast<size_t>(p)] == 0) return p;
  }
  // None above: the sequence's cells leave position order, which costs only last-bit equality
  // with a run where it is alone.
  for (int32_t p = 0; p <= after && p < n; ++p) {
    if (page_used_[static_cast<size_t>(p)] == 0) return p;
  }
  return -1;
}

Result<std::vector<int32_t>> KvCells::claim(std::span<const int32_t> seqs,
                                            std::span<const int32_t> pos) {
  if (seqs.size() != pos.size()) {
    return error(ErrorCode::kInvalidArgument, "kv cache: one sequence id per token is needed");
  }
  if (used_ + static_cast<int64_t>(pos.size()) > capacity_) {
    return error(ErrorCode::kOutOfRange, "context overflow: " + std::to_string(used_) +
                                             " cached + " + std::to_string(pos.size()) +
                                             " new tokens exceed the context size of " +
                                             std::to_string(capacity_) + " (raise -c)");
  }
  std::vector<int32_t> cells;
  cells.reserve(pos.size());
  Status st;
  // A page table that cannot grow ends the claim like any other error: what was claimed so
  // far is given back.
  try {
    for (size_t i = 0; i < pos.size() && st.ok(); ++i) {
      const int32_t s = seqs[i], p = pos[i];
      if (s < 0 || s >= kMaxSeqs) {
        st = error(ErrorCode::kInvalidArgument, "kv cache: sequence id " + std::to_string(s) +
                                                    " is out of range [0, " +
                                                    std::to_string(kMaxSeqs) + ")");
        break;
      }
      if (p < 0) {
        st = error(ErrorCode::kInvalidArgument, "kv cache: negative position " + std::to_string(p));
        break;
      }
      const int64_t block = p / kPage;
      int32_t page = page_of(s, block);
      int64_t cell = page < 0 ? -1 : page * kPage + p % kPage;
      if (cell >= 0 && has(cell, s) && pos_[static_cast<size_t>(cell)] == p) {
        st = error(ErrorCode::kInvalidArgument, "kv cache: sequence " + std::to_string(s) +
                                                    " already holds position " + std::to_string(p));
        break;
      }
      if (cell < 0 || pos_[static_cast<size_t>(cell)] >= 0) {
        // No page for this block yet, or its cell is taken by another sequence (a shared page):
        // a fresh page, after the sequence's earlier ones.
        int32_t after = -1;
        for (int64_t b = block - 1; b >= 0 && after < 0; --b) after = page_of(s, b);
        page = free_page(after);
        if (page < 0) {
          st = error(ErrorCode::kOutOfRange, "context overflow: no free page of " +
                                                 std::to_string(kPage) + " cells for sequence " +
                                                 std::to_string(s) + " (raise -c)");
          break;
        }
        std::vector<int32_t>& table = block_pages_[static_cast<size_t>(s)];
        if (static_cast<int64_t>(table.size()) <= block)
          table.resize(static_cast<size_t>(block) + 1, -1);
        table[static_cast<size_t>(block)] = page;
        cell = page * kPage + p % kPage;
      }
      pos_[static_cast<size_t>(cell)] = p;
      seqs_[static_cast<size_t>(cell)] = uint64_t{1} << s;
      ++page_used_[static_cast<size_t>(cell / kPage)];
      ++used_;
      cells.push_back(static_cast<int32_t>(cell));
    }
  } catch (const std::bad_alloc&) {
    st = error(ErrorCode::kOutOfMemory, "kv cache: out of memory");
  }
  if (!st.ok()) {
    release(cells, seqs.first(cells.size()));
    return st;
  }
  return cells;
}

void KvCells::drop(int64_t cell, int32_t seq) {
  const auto c = static_cast<size_t>(cell);
  if (!has(cell, seq)) return;
  seqs_[c] &= ~(uint64_t{1} << seq);
  const int64_t page = cell / kPage;
  const int64_t block = pos_[c] / kPage;
  if (seqs_[c] == 0) {
    pos_[c] = -1;
    --page_used_[static_cast<size_t>(page)];
    --used_;
  }
  // The block no longer maps to this page once the page holds none of the sequence's cells.
  if (page_of(seq, block) != page) return;
  for (int64_t i = page * kPage; i < (page + 1) * kPage; ++i) {
    if (has(i, seq)) return;
  }
  block_pages_[static_cast<size_t>(seq)][static_cast<size_t>(block)] = -1;
}

void KvCells::release(std::span<const int32_t> cells, std::span<const int32_t> seqs) {
  for (size_t i = 0; i < cells.size() && i < seqs.size(); ++i) drop(cells[i], seqs[i]);
}

void KvCells::seq_rm(int32_t seq, int32_t p0, int32_t p1) {
  for (int64_t c = 0; c < size(); ++c) {
    const int32_t p = pos_[static_cast<size_t>(c)];
    if (p < 0 || p < p0 || (p1 >= 0 && p >= p1)) continue;
    if (seq >= 0) {
      drop(c, seq);
      continue;
    }
    for (int32_t s = 0; s < kMaxSeqs; ++s) drop(c, s);
  }
}

void KvCells::seq_cp(int32_t src, int32_t dst, int32_t p0, int32_t p1) {
  if (src == dst || src < 0 || dst < 0 || src >= kMaxSeqs || dst >= kMaxSeqs) return;
  for (int64_t c = 0; c < size(); ++c) {
    const int32_t p = pos_[static_cast<size_t>(c)];
    if (p < 0 || !has(c, src) || p < p0 || (p1 >= 0 && p >= p1)) continue;
    seqs_[static_cast<size_t>(c)] |= uint64_t{1} << dst;
    // dst's later positions in this block try the same page first.
    std::vector<int32_t>& table = block_pages_[static_cast<size_t>(dst)];
    const int64_t block = p / kPage;
    if (static_cast<int64_t>(table.size()) <= block)
      table.resize(static_cast<size_t>(block) + 1, -1);
    if (table[static_cast<size_t>(block)] < 0) {
      table[static_cast<size_t>(block)] = static_cast<int32_t>(c / kPage);
    }
  }
}

void KvCells::seq_keep(int32_t seq) {
  for (int32_t s = 0; s < kMaxSeqs; ++s) {
    if (s != seq) seq_rm(s);
  }
}

int32_t KvCells::seq_pos_max(int32_t seq) const {
  if (seq < 0 || seq >= kMaxSeqs) return -1;
  int32_t m = -1;
  for (int64_t c = 0; c < size(); ++c) {
    if (has(c, seq)) m = std::max(m, pos_[static_cast<size_t>(c)]);
  }
  return m;
}

void KvCells::clear() {
  std::fill(pos_.begin(), pos_.end(), -1);
  std::fill(seqs_.begin(), seqs_.end(), 0);
  std::fill(page_used_.begin(), page_used_.end(), 0);
  for (auto& t : block_pages_) t.clear();
  used_ = 0;
}

}  // namespace strata::engine
