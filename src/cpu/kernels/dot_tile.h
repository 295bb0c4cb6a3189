// Turns a tile kernel templated on its shape into a DotTileFn (or DotSliceFn) that takes the
// shape at run time.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "cpu/kernels/simd.h"

namespace strata::cpu::STRATA_KERNEL_NS {

/// Calls f.template operator()<W, A>() for the runtime nw in [1, NW] and na in [1, NA]. Each
/// shape is its own instantiation so accumulators stay in registers, and edge tiles use the
/// very code (and rounding) of full ones.
template <int NW, int NA, class F>
[[gnu::always_inline]] inline void with_tile_shape(int nw, int na, const F& f) {
  if constexpr (NW > 1) {
    if (nw < NW) return with_tile_shape<NW - 1, NA>(nw, na, f);
  }
  if constexpr (NA > 1) {
    if (na < NA) return with_tile_shape<NW, NA - 1>(nw, na, f);
  }
  f.template operator()<NW, NA>();
}

/// Calls Kernel::template run<NW, NA>(...) for the runtime shape (see with_tile_shape).
template <class Kernel, int NW, int NA>
void tile_dispatch(int64_t k, const uint8_t* w, size_t ldw, int nw, const uint8_t* a, size_t lda,
                   int na, float* out, int64_t ldo_w, int64_t ldo_a) {
  with_tile_shape<NW, NA>(nw, na, [&]<int W, int A>() {
    Kernel::template run<W, A>(k, w, ldw, a, lda, out, ldo_w, ldo_a);
  });
}

/// Calls Kernel::template slice<NW, NA>(...) for the runtime shape: a DotSliceFn.
template <class Kernel, int NW, int NA>
void slice_dispatch(int64_t k, int64_t k0, int64_t k1, const uint8_t* w, size_t ldw, int nw,
                    const uint8_t* a, size_t lda, int na, float* lanes, float* out, int64_t ldo_w,
                    int64_t ldo_a) {
  with_tile_shape<NW, NA>(nw, na, [&]<int W, int A>() {
    Kernel::template slice<W, A>(k, k0, k1, w, ldw, a, lda, lanes, out, ldo_w, ldo_a);
  });
}

/// For kernels with one weight row per lane of a register of kRows: calls
/// Kernel::template run<H, NA>(...) for the runtime shape, H registers of rows (by nw), then
/// na activation rows.
template <class Kernel, int kRows, int H, int NA>
void register_tile_dispatch(int64_t k, const uint8_t* w, size_t ldw, int nw, const uint8_t* a,
                            size_t lda, int na, float* out, int64_t ldo_w, int64_t ldo_a) {
  if constexpr (H > 1) {
    if (nw <= kRows * (H - 1)) {
      return register_tile_dispatch<Kernel, kRows, H - 1, NA>(k, w, ldw, nw, a, lda, na, out, ldo_w,
                                                              ldo_a);
    }
  }
  if constexpr (NA > 1) {
    if (na < NA) {
      return register_tile_dispatch<Kernel, kRows, H, NA - 1>(k, w, ldw, nw, a, lda, na, out, ldo_w,
                                                              ldo_a);
    }
  }
  Kernel::template run<H, NA>(k, w, ldw, nw, a, lda, out, ldo_w, ldo_a);
}

#if defined(STRATA_CPU_AVX2)
/// Stores H registers of kRows rows' outputs for NA activation rows: row kRows h + r of
/// activation row c to out[(kRows h + r) ldo_w + c ldo_a], for the nw rows that exist.
template <int kRows, int H, int NA, class Vec>
void store_register_rows(const Vec (&acc)[H][NA], int nw, float* out, int64_t ldo_w,
                         int64_t ldo_a) {
  for (int h = 0; h < H; ++h) {
    const int rows = std::min(nw - kRows * h, kRows);
    float* o = out + kRows * h * ldo_w;
    for (int c = 0; c < NA; ++c) simd::store_first(o + c * ldo_a, acc[h][c], rows, ldo_w);
  }
}
#endif

}  // namespace strata::cpu::STRATA_KERNEL_NS
