#include "meta/sharded.h"

#include <cstring>

#include "core/types.h"

namespace strata::meta {

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
