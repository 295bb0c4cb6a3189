// The packed mul_mat path of the q4_k, q5_k and q6_k kernels: activation packing (the layout is
// in dot_k_packed.h) and the lookup.
#include <cstring>

#include "cpu/kernels/dot_k_packed.h"
#include "cpu/kernels/dot_packed.h"
#include "cpu/kernels/quantize_act.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace kquant {

template <bool Flipped>
void pack_q8k(const float* src, uint8_t* dst, int64_t k) {
  auto* out = reinterpret_cast<PackedQ8K*>(dst);
  for (int64_t i = 0; i < k / core::kQK_K; ++i) {
    core::BlockQ8_K b;
    quantize_q8_k(src + i * core::kQK_K, &b, core::kQK_K);
    PackedQ8K& p = out[i];
    std::memset(&p, 0, sizeof p);
    for (int e = 0; e < core::kQK_K; ++e) {
      p.qs[e] = static_cast<int8_t>(Flipped ? b.qs[e] ^ 0x80 : b.qs[e]);
    }
    for (int s = 0; s < 8; ++s)
      p.sums[s] = static_cast<int16_t>(b.bsums[2 * s] + b.bsums[2 * s + 1]);
    p.d = b.d;
    p.neg_d = -b.d;
  }
}

template void pack_q8k<false>(const float*, uint8_t*, int64_t);
template void pack_q8k<true>(const float*, uint8_t*, int64_t);

size_t packed_q8k_row_bytes(int64_t k) {
  return static_cast<size_t>(k / core::kQK_K) * sizeof(PackedQ8K);
}

}  // namespace kquant

const PackedDot* packed_dot_k(core::Type weight_type, int64_t k) {
#if defined(STRATA_CPU_AVX512)
  if (k % core::kQK_K != 0) return nullptr;
  if (weight_type == core::Type::kQ4_K) return &kPackedQ4_K;
  if (weight_type == core::Type::kQ4_Kx16) return &kPackedQ4_Kx16;
  if (weight_type == core::Type::kQ5_K) return &kPackedQ5_K;
  if (weight_type == core::Type::kQ6_K) return &kPackedQ6_K;
#elif defined(STRATA_CPU_AVX2)
  if (k % core::kQK_K != 0) return nullptr;
  if (weight_type == core::Type::kQ4_K) return &kPackedQ4_K;
  if (weight_type == core::Type::kQ4_Kx16) return &kPackedQ4_Kx16;
  if (weight_type == core::Type::kQ5_K) return &kPackedQ5_K;
  if (weight_type == core::Type::kQ6_K) return &kPackedQ6_K;
#else
  (void)weight_type;
  (void)k;
#endif
  return nullptr;
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
