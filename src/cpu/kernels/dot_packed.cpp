#include "cpu/kernels/dot_packed.h"

namespace strata::cpu::STRATA_KERNEL_NS {

const PackedDot* packed_dot(core::Type weight_type, int64_t k) {
  if (const PackedDot* p = packed_dot_q8_0(weight_type, k)) return p;
  if (const PackedDot* p = packed_dot_k(weight_type, k)) return p;
  if (const PackedDot* p = packed_dot_f16(weight_type, k)) return p;
  return packed_dot_q4_0(weight_type, k);
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
