#include "meta/sharded.h"

#include <cstring>

#include "core/types.h"

namespace strata::meta {

void for_each_piece_run(const core::Tensor& whole, const core::Tensor& shard, int axis,
                        const Pieces& pieces,
                        const std::function<void(size_t, size_t, size_t)>& fn) {
  const auto a = static_cast<size_t>(axis);
  // Byte offset of element `i` along the axis within one run of the dimensions below it.
  auto bytes_at = [&](int64_t i) {
    return axis == 0 ? core::row_size(whole.type, i) : static_cast<size_t>(i) * whole.nb[a];
  };
  int64_t outer = 1;
  for (size_t k = a + 1; k < core::kMaxDims; ++k) outer *= whole.ne[k];
  const size_t whole_run = a + 1 < core::kMaxDims ? whole.nb[a + 1] : whole.nbytes();
  const size_t shard_run = a + 1 < core::kMaxDims ? shard.nb[a + 1] : shard.nbytes();
  for (int64_t o = 0; o < outer; ++o) {
    size_t pos = 0;
    for (const Range& r : pieces) {
      const size_t from = bytes_at(r.lo), len = bytes_at(r.hi) - from;
      fn(static_cast<size_t>(o) * whole_run + from, static_cast<size_t>(o) * shard_run + pos, len);
      pos += len;
    }
  }
}

void copy_pieces(const core::Tensor& whole, const void* whole_data, const core::Tensor& shard,
                 void* shard_data, int axis, const Pieces& pieces, bool to_shard) {
  auto* w = static_cast<uint8_t*>(const_cast<void*>(whole_data));
  auto* s = static_cast<uint8_t*>(shard_data);
  for_each_piece_run(whole, shard, axis, pieces, [&](size_t wo, size_t so, size_t len) {
    if (to_shard) {
      std::memcpy(s + so, w + wo, len);
    } else {
      std::memcpy(w + wo, s + so, len);
    }
  });
}

}  // namespace strata::meta
