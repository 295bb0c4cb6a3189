#include "core/quants/interleave.h"

#include <cstring>

namespace strata::core {
namespace {

// Visits every (group block, row, plain block) pair; `move` copies one row's block between
// the two layouts.
template <class Move>
void for_each_block(int64_t rows, int64_t k, Move move) {
  const int64_t blocks = k / kQK4_0;
  for (int64_t g = 0; g < rows / BlockQ4_0x16::kRows; ++g) {
    for (int64_t b = 0; b < blocks; ++b) {
      for (int r = 0; r < BlockQ4_0x16::kRows; ++r) {
        const int64_t row = g * BlockQ4_0x16::kRows + r;
        move(g * blocks + b, r, row * blocks + b);
      }
    }
  }
}

}  // namespace

void interleave_q4_0x16(const void* src, void* dst, int64_t rows, int64_t k) {
  const auto* in = static_cast<const BlockQ4_0*>(src);
  auto* out = static_cast<BlockQ4_0x16*>(dst);
  for_each_block(rows, k, [&](int64_t group_block, int r, int64_t plain) {
    BlockQ4_0x16& o = out[group_block];
    o.d[r] = in[plain].d;
    for (int s = 0; s < 4; ++s) std::memcpy(o.qs[s][r], in[plain].qs + 4 * s, 4);
  });
}

void deinterleave_q4_0x16(const void* src, void* dst, int64_t rows, int64_t k) {
  const auto* in = static_cast<const BlockQ4_0x16*>(src);
  auto* out = static_cast<BlockQ4_0*>(dst);
  for_each_block(rows, k, [&](int64_t group_block, int r, int64_t plain) {
    const BlockQ4_0x16& i = in[group_block];
    out[plain].d = i.d[r];
    for (int s = 0; s < 4; ++s) std::memcpy(out[plain].qs + 4 * s, i.qs[s][r], 4);
  });
}

}  // namespace strata::core
