// The activation layout of the packed mul_mat path (dot_packed.h) for q4_k, q5_k and q6_k
// weights, used by the AVX-512 kernels (dot_packed_q4_k.cpp, dot_packed_q5_k.cpp,
// dot_packed_q6_k.cpp) and their 256-bit counterparts (dot_packed_q*_k_lanes8.cpp).
//
// Each super-block keeps core's q8_k rounding of the row, plus what every tile would otherwise
// recompute for every weight row: the sums over each sub-block of 32 (for the mins of q4_k and
// q5_k) and, for q6_k, the levels offset to unsigned bytes. Same values as the plain q8_k path,
// so both paths give the same bits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/blocks.h"
#include "cpu/kernels/dot_packed.h"
#include "cpu/kernels/simd_int.h"

namespace strata::cpu::STRATA_KERNEL_NS::kquant {

/// One packed activation super-block, 320 bytes so every one starts a cache line.
struct alignas(64) PackedQ8K {
  /// The q8_k levels; for q6_k (packed Flipped) levels + 128 as unsigned bytes (q ^ 0x80).
  int8_t qs[core::kQK_K];
  int16_t sums[8];  ///< sum of the levels over sub-block s of 32 (bsums[2s] + bsums[2s + 1])
  float d;          ///< the q8_k scale
  float neg_d;      ///< -d
};
static_assert(sizeof(PackedQ8K) == 320);

/// Packs k floats (a multiple of 256) with core's q8_k rounding; Flipped stores q ^ 0x80.
template <bool Flipped>
void pack_q8k(const float* src, uint8_t* dst, int64_t k);

/// Bytes of a packed row of k elements.
size_t packed_q8k_row_bytes(int64_t k);

}  // namespace strata::cpu::STRATA_KERNEL_NS::kquant

namespace strata::cpu::STRATA_KERNEL_NS {

#if defined(STRATA_CPU_AVX512)
// The packed paths, defined beside their kernels (dot_packed_q4_k.cpp, dot_packed_q5_k.cpp,
// dot_packed_q6_k.cpp).
extern const PackedDot kPackedQ4_K;
extern const PackedDot kPackedQ4_Kx16;  ///< q4_k rows regrouped at load (core::kQ4_Kx16)
extern const PackedDot kPackedQ5_K;
extern const PackedDot kPackedQ6_K;
#elif defined(STRATA_CPU_AVX2)
// The 256-bit paths (dot_packed_q4_k_lanes8.cpp, dot_packed_q5_k_lanes8.cpp,
// dot_packed_q6_k_lanes8.cpp), with the 512-bit ones' bits.
extern const PackedDot kPackedQ4_K;
extern const PackedDot kPackedQ4_Kx16;
extern const PackedDot kPackedQ5_K;
extern const PackedDot kPackedQ6_K;
#endif

}  // namespace strata::cpu::STRATA_KERNEL_NS
