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
constexpr Field kQ8_0Fields[] = {{offsetof(BlockQ8_0, d), 2, 2}, {offsetof(BlockQ8_0, qs), 32, 4}};
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
  if (grouped == Type::kQ8_0x16) return {Type::kQ8_0, kQ8_0Fields};
  return {grouped, {}};
}

// One field of one block of sixteen rows, in either direction. Steps are 2 or 4 bytes: the
// width is a constant, so each copy is one move (load time: a 600 MiB model regroups in about
// a tenth of a second).
template <int kWidth, bool kToGroups>
void move_field(uint8_t* const (&rows)[kGroupRows], uint8_t* group, const Field& f) {
  for (int s = 0; s < f.bytes / kWidth; ++s) {
    for (int r = 0; r < kGroupRows; ++r) {
      uint8_t* plain = rows[r] + f.offset + s * kWidth;
      uint8_t* grouped = group + (s * kGroupRows + r) * kWidth;
      if constexpr (kToGroups) {
        std::memcpy(grouped, plain, kWidth);
      } else {
        std::memcpy(plain, grouped, kWidth);
      }
    }
  }
}

template <bool kToGroups>
void move_rows(Type grouped_type, uint8_t* plain, uint8_t* grouped, int64_t rows, int64_t k) {
  const Layout l = layout(grouped_type);
  const size_t block = type_size(l.plain);
  const int64_t blocks = k / block_size(l.plain);
  const size_t row_bytes = block * static_cast<size_t>(blocks);
  for (int64_t g = 0; g < rows / kGroupRows; ++g) {
    uint8_t* first = plain + static_cast<size_t>(g * kGroupRows) * row_bytes;
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t* row_blocks[kGroupRows];
      for (int r = 0; r < kGroupRows; ++r) {
        row_blocks[r] = first + static_cast<size_t>(r) * row_bytes + static_cast<size_t>(b) * block;
      }
      uint8_t* field = grouped + static_cast<size_t>(g * blocks + b) * block * kGroupRows;
      for (const Field& f : l.fields) {
        if (f.width == 4) {
          move_field<4, kToGroups>(row_blocks, field, f);
        } else {
          move_field<2, kToGroups>(row_blocks, field, f);
        }
        field += static_cast<size_t>(f.bytes) * kGroupRows;
      }
    }
  }
}

}  // namespace

Type plain_rows_type(Type grouped) {
  return layout(grouped).plain;
}

void interleave_rows(Type grouped, const void* src, void* dst, int64_t rows, int64_t k) {
  // move_rows reads through `plain` only in this direction.
  move_rows<true>(grouped, const_cast<uint8_t*>(static_cast<const uint8_t*>(src)),
                  static_cast<uint8_t*>(dst), rows, k);
}

void deinterleave_rows(Type grouped, const void* src, void* dst, int64_t rows, int64_t k) {
  move_rows<false>(grouped, static_cast<uint8_t*>(dst),
                   const_cast<uint8_t*>(static_cast<const uint8_t*>(src)), rows, k);
}

}  // namespace strata::core
