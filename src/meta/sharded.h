// A tensor a meta device holds as one shard per member device.
#pragma once

#include <vector>

#include "core/tensor.h"
#include "core/types.h"
#include "meta/shard_ranges.h"

namespace strata::meta {

/// Where the parts of a tensor placed in a meta buffer live. `axis` -1 is mirrored: every
/// shard is a whole copy. Otherwise shard d holds pieces[d] along `axis` (other dimensions
/// whole), back to back, in member d's memory.
struct Sharded {
  int axis = -1;
  std::vector<Pieces> pieces;
  std::vector<core::Tensor*> shard;
};

/// Copies between a whole tensor's bytes and one shard of it: the shard's pieces along
/// `axis` (to_shard: whole -> shard, else shard -> whole). Both are contiguous; along axis 0
/// the pieces must start and end on quantization blocks.
/// Calls fn(whole_offset, shard_offset, bytes) for each run of bytes the shard's pieces along
/// `axis` take from the whole tensor, in shard order. (A template: it allocates nothing, so
/// writing a KV cache's shards cannot fail half way.)
template <typename Fn>
void for_each_piece_run(const core::Tensor& whole, const core::Tensor& shard, int axis,
                        const Pieces& pieces, Fn&& fn) {
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
                 void* shard_data, int axis, const Pieces& pieces, bool to_shard);

}  // namespace strata::meta
