// A tensor a meta device holds as one shard per member device.
#pragma once

#include <functional>
#include <vector>

#include "core/tensor.h"
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
/// `axis` take from the whole tensor, in shard order.
void for_each_piece_run(const core::Tensor& whole, const core::Tensor& shard, int axis,
                        const Pieces& pieces,
                        const std::function<void(size_t, size_t, size_t)>& fn);

void copy_pieces(const core::Tensor& whole, const void* whole_data, const core::Tensor& shard,
                 void* shard_data, int axis, const Pieces& pieces, bool to_shard);

}  // namespace strata::meta
