// Turns a tile kernel templated on its shape into a DotTileFn that takes the shape at run time.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::cpu::STRATA_KERNEL_NS {

/// Calls Kernel::template run<NW, NA>(...) for the runtime nw in [1, NW] and na in [1, NA].
/// Each shape is its own instantiation so accumulators stay in registers, and edge tiles use
/// the very code (and rounding) of full ones.
template <class Kernel, int NW, int NA>
void tile_dispatch(int64_t k, const uint8_t* w, size_t ldw, int nw, const uint8_t* a, size_t lda,
                   int na, float* out, int64_t ldo_w, int64_t ldo_a) {
  if constexpr (NW > 1) {
    if (nw < NW) {
      tile_dispatch<Kernel, NW - 1, NA>(k, w, ldw, nw, a, lda, na, out, ldo_w, ldo_a);
      return;
    }
  }
  if constexpr (NA > 1) {
    if (na < NA) {
      tile_dispatch<Kernel, NW, NA - 1>(k, w, ldw, nw, a, lda, na, out, ldo_w, ldo_a);
      return;
    }
  }
  Kernel::template run<NW, NA>(k, w, ldw, a, lda, out, ldo_w, ldo_a);
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
