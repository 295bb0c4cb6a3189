#include "core/quants/interleave.h"

#include <cstddef>
#include <cstring>
#include <span>

namespace strata::core {
namespace {

constexpr int kGroupRows = 16;

/// Bytes [offset, offset + bytes) of a plain block, stored step by step (`width` bytes each)
/// with the sixteen rows' steps side by side.
struct Field {
  int offset;
  int bytes;
  int width;
};

constexpr Field kQ4_0Fields[] = {{offsetof(BlockQ4_0, d), 2, 2}, {offsetof(BlockQ4_0, qs), 16, 4}};
constexpr Field kQ4_KFields[] = {{offsetof(BlockQ4_K, d), 2, 2},
                                 {offsetof(BlockQ4_K, dmin), 2, 2},
                                 {offsetof(BlockQ4_K, scales), 12, 4},
                                 {offsetof(BlockQ4_K, qs), 128, 4}};

struct Layout {
  Type plain;
  std::span<const Field> fields;
};

Layout layout(Type grouped) {
  if (grouped == Type::kQ4_0x16) return {Type::kQ4_0, kQ4_0Fields};
  if (grouped == Type::kQ4_Kx16) return {Type::kQ4_K, kQ4_KFields};
  return {grouped, {}};
}

// Calls move(plain byte, grouped byte, bytes) for every step of every row's block.
template <class Move>
void for_each_step(Type grouped, int64_t rows, int64_t k, Move move) {
  const Layout l = layout(grouped);
  const size_t block = type_size(l.plain);
  const int64_t blocks = k / block_size(l.plain);
  for (int64_t g = 0; g < rows / kGroupRows; ++g) {
    for (int64_t b = 0; b < blocks; ++b) {
      const size_t group_block = (static_cast<size_t>(g * blocks + b)) * block * kGroupRows;
      size_t field_base = group_block;
      for (const Field& f : l.fields) {
        for (int r = 0; r < kGroupRows; ++r) {
          const size_t plain = static_cast<size_t>((g * kGroupRows + r) * blocks + b) * block;
          for (int s = 0; s < f.bytes / f.width; ++s) {
            move(plain + f.offset + static_cast<size_t>(s * f.width),
                 field_base + static_cast<size_t>((s * kGroupRows + r) * f.width), f.width);
          }
        }
        field_base += static_cast<size_t>(f.bytes) * kGroupRows;
      }
    }
  }
}

// Steps are 2 or 4 bytes: copies of a constant size compile to one move each.
void copy_step(uint8_t* to, const uint8_t* from, int n) {
  if (n == 4) {
    std::memcpy(to, from, 4);
  } else {
    std::memcpy(to, from, 2);
  }
}

}  // namespace

Type plain_rows_type(Type grouped) {
  return layout(grouped).plain;
}

void interleave_rows(Type grouped, const void* src, void* dst, int64_t rows, int64_t k) {
  const auto* in = static_cast<const uint8_t*>(src);
  auto* out = static_cast<uint8_t*>(dst);
  for_each_step(grouped, rows, k,
                [&](size_t plain, size_t group, int n) { copy_step(out + group, in + plain, n); });
}

void deinterleave_rows(Type grouped, const void* src, void* dst, int64_t rows, int64_t k) {
  const auto* in = static_cast<const uint8_t*>(src);
  auto* out = static_cast<uint8_t*>(dst);
  for_each_step(grouped, rows, k,
                [&](size_t plain, size_t group, int n) { copy_step(out + plain, in + group, n); });
}

}  // namespace strata::core
