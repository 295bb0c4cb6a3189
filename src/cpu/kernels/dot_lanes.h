// What the AVX-512 VNNI kernels that keep one weight row per int32 lane share
// (dot_packed_q4_0.cpp, dot_packed_q4_k.cpp): sixteen rows transposed so lane r of a register
// holds four consecutive quant bytes of row r, a vpdpbusd against four activation bytes
// broadcast to every lane then advances all sixteen rows' dot products, and the float work is
// done for sixteen outputs at once with no horizontal sum.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cpu/kernels/dot_tile.h"
#include "cpu/kernels/kernel_set.h"
#include "cpu/kernels/simd.h"
#include "cpu/kernels/simd_int.h"

#if defined(STRATA_CPU_AVX512)

namespace strata::cpu::STRATA_KERNEL_NS::lanes {

constexpr int kRows = 16;  ///< weight rows per register: one per int32 lane

struct Index16 {
  alignas(64) int32_t v[16];
};

// Four registers of four rows' sixteen bytes (one row per 128-bit lane) become four registers
// of one dword per row in two rounds of two-source dword permutes.
inline constexpr Index16 kPickEvenRows = {
    {0, 4, 8, 12, 16, 20, 24, 28, 1, 5, 9, 13, 17, 21, 25, 29}};
inline constexpr Index16 kPickOddRows = {
    {2, 6, 10, 14, 18, 22, 26, 30, 3, 7, 11, 15, 19, 23, 27, 31}};
inline constexpr Index16 kLowHalves = {{0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23}};
inline constexpr Index16 kHighHalves = {
    {8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31}};

inline __m512i load_index(const Index16& x) {
  return _mm512_load_si512(x.v);
}

/// t[j] lane r = dword j of the sixteen bytes at p + offset[r].
[[gnu::always_inline]] inline void transpose16x4(const uint8_t* p, const size_t (&offset)[kRows],
                                                 __m512i (&t)[4]) {
  __m512i z[4];
  for (int i = 0; i < 4; ++i) {
    const auto row = [&](int q) {
      return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + offset[4 * i + q]));
    };
    __m512i v = _mm512_zextsi128_si512(row(0));
    v = _mm512_inserti32x4(v, row(1), 1);
    v = _mm512_inserti32x4(v, row(2), 2);
    z[i] = _mm512_inserti32x4(v, row(3), 3);
  }
  const __m512i even = load_index(kPickEvenRows), odd = load_index(kPickOddRows);
  const __m512i a0 = _mm512_permutex2var_epi32(z[0], even, z[1]);
  const __m512i a1 = _mm512_permutex2var_epi32(z[0], odd, z[1]);
  const __m512i b0 = _mm512_permutex2var_epi32(z[2], even, z[3]);
  const __m512i b1 = _mm512_permutex2var_epi32(z[2], odd, z[3]);
  const __m512i lo = load_index(kLowHalves), hi = load_index(kHighHalves);
  t[0] = _mm512_permutex2var_epi32(a0, lo, b0);
  t[1] = _mm512_permutex2var_epi32(a0, hi, b0);
  t[2] = _mm512_permutex2var_epi32(a1, lo, b1);
  t[3] = _mm512_permutex2var_epi32(a1, hi, b1);
}

/// Row offsets for sixteen rows `ldw` apart, of which nw exist: rows past nw repeat the last
/// one, so their lanes compute something finite that is never stored.
inline void row_offsets(size_t ldw, int nw, size_t (&offset)[kRows]) {
  for (int r = 0; r < kRows; ++r) offset[r] = static_cast<size_t>(r < nw ? r : nw - 1) * ldw;
}

/// The four activation bytes at p broadcast to every lane.
[[gnu::always_inline]] inline __m512i broadcast4(const int8_t* p) {
  int32_t four;
  std::memcpy(&four, p, sizeof four);
  return _mm512_set1_epi32(four);
}

/// The DotTileFn of a tile kernel Kernel::run<H, NA> (H registers of sixteen rows).
template <class Kernel, int H, int NA>
constexpr DotTileFn dispatch = register_tile_dispatch<Kernel, kRows, H, NA>;

}  // namespace strata::cpu::STRATA_KERNEL_NS::lanes

#endif  // STRATA_CPU_AVX512
