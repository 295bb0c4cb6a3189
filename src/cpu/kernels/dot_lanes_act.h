// The activation layout of the one-row-per-lane kernels for 32-element block weights (q4_0 and
// q8_0, in 512-bit registers in dot_lanes_q0.h and 256-bit ones in dot_lanes8.h): each block
// of q8_0 activations on a cache line of its own, with the correction for the weights' offset
// (their levels are unsigned, a fixed offset above the values) already summed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/blocks.h"
#include "core/float16.h"
#include "cpu/kernels/quantize_act.h"
#include "cpu/kernels/simd.h"

#if defined(STRATA_CPU_AVX2)

namespace strata::cpu::STRATA_KERNEL_NS::lanes {

/// One activation block as the kernels read it: a cache line.
struct alignas(64) ActBlock {
  int8_t qs[32];
  int32_t corr;  ///< -offset * (sum of the 32 activations): the weights' offset taken back
  float d;
  uint8_t pad[24];
};
static_assert(sizeof(ActBlock) == 64);

inline size_t act_row_bytes(int64_t k) {
  return static_cast<size_t>(k / core::kQK8_0) * sizeof(ActBlock);
}

/// Activations quantized as q8_0 for weights whose levels sit kOffset above their values.
template <int kOffset>
void pack_act(const float* src, uint8_t* dst, int64_t k) {
  auto* out = reinterpret_cast<ActBlock*>(dst);
  for (int64_t i = 0; i < k / core::kQK8_0; ++i, src += core::kQK8_0, ++out) {
    core::BlockQ8_0 b;
    quantize_q8_0(src, &b, core::kQK8_0);
    std::memcpy(out->qs, b.qs, sizeof out->qs);
    int32_t sum = 0;
    for (int8_t q : b.qs) sum += q;
    out->corr = -kOffset * sum;
    out->d = core::half_to_float(b.d);
    std::memset(out->pad, 0, sizeof out->pad);
  }
}

inline const ActBlock& act(const uint8_t* a, size_t lda, int c, int64_t b) {
  return reinterpret_cast<const ActBlock*>(a + c * lda)[b];
}

/// The four activation bytes at p as one int32.
[[gnu::always_inline]] inline int32_t act_dword(const int8_t* p) {
  int32_t four;
  std::memcpy(&four, p, sizeof four);
  return four;
}

}  // namespace strata::cpu::STRATA_KERNEL_NS::lanes

#endif  // STRATA_CPU_AVX2
