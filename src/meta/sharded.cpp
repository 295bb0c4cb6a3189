#include "meta/sharded.h"

#include <cstring>

#include "core/types.h"

namespace strata::meta {

void copy_pieces(const core::Tensor& whole, const void* whole_data, const core::Tensor& shard,
                 void* shard_data, int axis, const Pieces& pieces, bool to_shard) {
  const auto a = static_cast<size_t>(axis);
  // Byte offset of element `i` along the axis within one run of the dimensions below it.
  auto bytes_at = [&](int64_t i) {
    return axis == 0 ? core::row_size(whole.type, i) : static_cast<size_t>(i) * whole.nb[a];
  };
  int64_t outer = 1;
  for (size_t k = a + 1; k < core::kMaxDims; ++k) outer *= whole.ne[k];
  const size_t whole_run = a + 1 < core::kMaxDims ? whole.nb[a + 1] : whole.nbytes();
  const size_t shard_run = a + 1 < core::kMaxDims ? shard.nb[a + 1] : shard.nbytes();
  auto* w = static_cast<uint8_t*>(const_cast<void*>(whole_data));
  auto* s = static_cast<uint8_t*>(shard_data);
  for (int64_t o = 0; o < outer; ++o) {
    size_t pos = 0;
    for (const Range& r : pieces) {
      const size_t from = bytes_at(r.lo), len = bytes_at(r.hi) - from;
      uint8_t* wp = w + static_cast<size_t>(o) * whole_run + from;
      uint8_t* sp = s + static_cast<size_t>(o) * shard_run + pos;
      if (to_shard) {
        std::memcpy(sp, wp, len);
      } else {
        std::memcpy(wp, sp, len);
      }
      pos += len;
    }
  }
}

}  // namespace strata::meta
