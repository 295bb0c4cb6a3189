#include "cpu/kernels/dot.h"

#include "cpu/kernels/convert.h"
#include "cpu/kernels/dot_packed.h"
#include "cpu/kernels/quantize_act.h"

namespace strata::cpu::STRATA_KERNEL_NS {

const DotKernels* dot_kernels(core::Type weight_type) {
  switch (weight_type) {
    case core::Type::kF32:
      return &kDotF32;
    case core::Type::kF16:
      return &kDotF16;
    case core::Type::kBF16:
      return &kDotBF16;
    case core::Type::kQ8_0:
      return &kDotQ8_0;
    case core::Type::kQ8_0x16:
      return packed_dot(weight_type, core::kQK8_0) != nullptr ? &kDotQ8_0 : nullptr;
    case core::Type::kQ4_0:
      return &kDotQ4_0;
    case core::Type::kQ4_0x16:
      // Only the packed path reads regrouped rows (mul_mat takes it whenever it exists); this
      // entry names the activations' type. Sets without that path cannot compute the type.
      return packed_dot(weight_type, core::kQK8_0) != nullptr ? &kDotQ4_0 : nullptr;
    case core::Type::kQ5_0:
      return &kDotQ5_0;
    case core::Type::kQ4_1:
      return &kDotQ4_1;
    case core::Type::kQ5_1:
      return &kDotQ5_1;
    case core::Type::kQ2_K:
      return &kDotQ2_K;
    case core::Type::kQ3_K:
      return &kDotQ3_K;
    case core::Type::kQ4_K:
      return &kDotQ4_K;
    case core::Type::kQ4_Kx16:
      return packed_dot(weight_type, core::kQK_K) != nullptr ? &kDotQ4_K : nullptr;
    case core::Type::kQ5_K:
      return &kDotQ5_K;
    case core::Type::kQ6_K:
      return &kDotQ6_K;
    default:
      return nullptr;
  }
}

void convert_activations(core::Type act_type, const float* src, void* dst, int64_t n) {
  // Each path rounds like core's reference quantizer for its type, bit for bit.
  if (act_type == core::Type::kQ8_0) return quantize_q8_0(src, dst, n);
  if (act_type == core::Type::kQ8_K) return quantize_q8_k(src, dst, n);
  row_from_f32(act_type, src, dst, n);
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
