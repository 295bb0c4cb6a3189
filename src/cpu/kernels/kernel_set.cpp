// This kernel set's table (kernel_set.h); the only symbol its object file exports.
#include "cpu/kernels/kernel_set.h"

#include "cpu/kernels/convert.h"
#include "cpu/kernels/dot.h"
#include "cpu/kernels/dot_packed.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/quantize_act.h"
#include "cpu/kernels/simd.h"

// Names the set in messages, from the namespace CMake compiles it into.
#define STRATA_KERNEL_STR2(x) #x
#define STRATA_KERNEL_STR(x) STRATA_KERNEL_STR2(x)

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

#if defined(STRATA_CPU_AVX2)
void vector_exp8(const float* x, float* y) {
  _mm256_storeu_ps(y, simd::exp(_mm256_loadu_ps(x)));
}
constexpr void (*kVectorExp8)(const float*, float*) = vector_exp8;
constexpr bool kLlamaOrder = true;
#else
constexpr void (*kVectorExp8)(const float*, float*) = nullptr;
constexpr bool kLlamaOrder = false;
#endif

#if defined(STRATA_CPU_AVX2) && defined(__AVX512F__)
void vector_exp16(const float* x, float* y) {
  _mm512_storeu_ps(y, simd::exp(_mm512_loadu_ps(x)));
}
constexpr void (*kVectorExp16)(const float*, float*) = vector_exp16;
#else
constexpr void (*kVectorExp16)(const float*, float*) = nullptr;
#endif

#if defined(STRATA_CPU_AVX2) && defined(__AVX512F__) && defined(__AVX512BF16__)
constexpr bool kBf16Pairs = true;
#else
constexpr bool kBf16Pairs = false;
#endif

}  // namespace

extern const KernelSet kKernelSet;
const KernelSet kKernelSet = {
    STRATA_KERNEL_STR(STRATA_KERNEL_NS),
    check_node,
    work_size,
    compute_node,
    mul_mat_shares_input,
    dot_kernels,
    packed_dot,
    packed_dot_f16_chained,
    convert_activations,
    quantize_q8_0,
    quantize_q8_k,
    q8_0_block_portable,
    f16_to_f32,
    f32_to_f16,
    bf16_to_f32,
    f32_to_bf16,
    kVectorExp8,
    kVectorExp16,
    kBf16Pairs,
    kLlamaOrder,
};

}  // namespace strata::cpu::STRATA_KERNEL_NS
