// KvCells: which cell holds which sequence's token, page by page.
#include <gtest/gtest.h>

#include <vector>

#include "engine/kv_cells.h"

namespace strata::engine {
namespace {

std::vector<int32_t> seq_of(size_t n, int32_t s) {
  return std::vector<int32_t>(n, s);
}

std::vector<int32_t> range(int32_t first, int32_t n) {
  std::vector<int32_t> v;
  for (int32_t i = 0; i < n; ++i) v.push_back(first + i);
  return v;
}

TEST(KvCells, OneSequenceFillsCellsInPositionOrder) {
  KvCells c(100);
  EXPECT_EQ(c.size(), 128);  // whole pages
  EXPECT_EQ(c.capacity(), 100);
  auto cells = c.claim(seq_of(40, 0), range(0, 40));
  ASSERT_TRUE(cells.ok());
  EXPECT_EQ(*cells, range(0, 40));
  EXPECT_EQ(c.used(), 40);
  EXPECT_EQ(c.view_cells(), 64);
  EXPECT_EQ(c.seq_pos_max(0), 39);
  EXPECT_EQ(c.seq_pos_max(1), -1);
}

TEST(KvCells, EachSequenceKeepsItsPositionsAtTheirPageOffsets) {
  KvCells c(256);
  // Interleaved: A0 B0 A1 B1 ...
  std::vector<int32_t> seqs, pos;
  for (int32_t p = 0; p < 40; ++p) {
    for (int32_t s : {0, 1}) {
      seqs.push_back(s);
      pos.push_back(p);
    }
  }
  auto cells = c.claim(seqs, pos);
  ASSERT_TRUE(cells.ok());
  for (size_t i = 0; i < cells->size(); ++i) {
    EXPECT_EQ((*cells)[i] % KvCells::kPage, pos[i] % KvCells::kPage);
    EXPECT_TRUE(c.has((*cells)[i], seqs[i]));
    EXPECT_EQ(c.pos((*cells)[i]), pos[i]);
  }
  // Each sequence's cells rise with its positions.
  for (int32_t s : {0, 1}) {
    int32_t last = -1;
    for (size_t i = 0; i < cells->size(); ++i) {
      if (seqs[i] != s) continue;
      EXPECT_GT((*cells)[i], last);
      last = (*cells)[i];
    }
  }
}

TEST(KvCells, RemoveCopyAndKeep) {
  KvCells c(128);
  ASSERT_TRUE(c.claim(seq_of(10, 0), range(0, 10)).ok());
  c.seq_cp(0, 3, 0, 6);  // sequence 3 shares the first 6 tokens
  EXPECT_EQ(c.seq_pos_max(3), 5);
  EXPECT_EQ(c.used(), 10);  // shared, not copied
  c.seq_rm(0, 6);           // sequence 0 drops positions 6..9
  EXPECT_EQ(c.seq_pos_max(0), 5);
  EXPECT_EQ(c.used(), 6);
  // Both may now append position 6: the first gets the page's cell, the second a new page.
  auto a = c.claim(seq_of(1, 0), range(6, 1));
  auto b = c.claim(seq_of(1, 3), range(6, 1));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE((*a)[0], (*b)[0]);
  EXPECT_EQ((*b)[0] % KvCells::kPage, 6);
  c.seq_keep(3);
  EXPECT_EQ(c.seq_pos_max(0), -1);
  EXPECT_EQ(c.seq_pos_max(3), 6);
  EXPECT_EQ(c.used(), 7);
  c.seq_rm(-1);
  EXPECT_EQ(c.used(), 0);
  EXPECT_EQ(c.view_cells(), 0);
}

TEST(KvCells, BadClaimsChangeNothing) {
  KvCells c(64);
  ASSERT_TRUE(c.claim(seq_of(60, 0), range(0, 60)).ok());
  auto over = c.claim(seq_of(5, 1), range(0, 5));
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(c.used(), 60);
  // Room for 4 tokens, but sequence 1 needs a page of its own and none is free.
  auto no_page = c.claim(seq_of(2, 1), range(0, 2));
  ASSERT_FALSE(no_page.ok());
  EXPECT_EQ(no_page.status().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(c.used(), 60);
  auto dup = c.claim(std::vector<int32_t>{0, 0}, std::vector<int32_t>{60, 59});
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(c.used(), 60);  // position 60 was rolled back too
  EXPECT_EQ(c.seq_pos_max(0), 59);
  auto bad_seq = c.claim(std::vector<int32_t>{KvCells::kMaxSeqs}, std::vector<int32_t>{0});
  EXPECT_EQ(bad_seq.status().code(), ErrorCode::kInvalidArgument);
  auto cells = c.claim(seq_of(2, 0), range(60, 2));
  ASSERT_TRUE(cells.ok());
  c.release(*cells, seq_of(2, 0));
  EXPECT_EQ(c.used(), 60);
}

}  // namespace
}  // namespace strata::engine
