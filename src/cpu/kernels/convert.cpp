#include "cpu/kernels/convert.h"

#include <cstring>

#include "cpu/kernels/simd.h"

namespace strata::cpu::STRATA_KERNEL_NS {

using core::BFloat16;
using core::Half;
using core::Type;

void f16_to_f32(const Half* src, float* dst, int64_t n) {
  int64_t i = 0;
#if defined(STRATA_CPU_AVX2)
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < n; ++i) dst[i] = core::half_to_float(src[i]);
}

void f32_to_f16(const float* src, Half* dst, int64_t n) {
  int64_t i = 0;
#if defined(STRATA_CPU_AVX2)
  // The hardware conversion rounds to nearest even, like core::float_to_half.
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
#endif
  for (; i < n; ++i) dst[i] = core::float_to_half(src[i]);
}

void bf16_to_f32(const BFloat16* src, float* dst, int64_t n) {
  int64_t i = 0;
#if defined(STRATA_CPU_AVX2)
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(w));
  }
#endif
  for (; i < n; ++i) dst[i] = core::bf16_to_float(src[i]);
}

void f32_to_bf16(const float* src, BFloat16* dst, int64_t n) {
  int64_t i = 0;
#if defined(STRATA_CPU_AVX2)
  // Integer round-to-nearest-even on the bit pattern, NaNs kept quiet: core::float_to_bf16
  // lane by lane. (The AVX-512 BF16 instruction flushes subnormals, so it cannot be used.)
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i half_ulp = _mm256_set1_epi32(0x7fff);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  const __m256i inf = _mm256_set1_epi32(0x7f800000);
  const __m256i quiet = _mm256_set1_epi32(0x400000);
  for (; i + 8 <= n; i += 8) {
    const __m256i u = _mm256_castps_si256(_mm256_loadu_ps(src + i));
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
    const __m256i rounded = _mm256_add_epi32(u, _mm256_add_epi32(half_ulp, lsb));
    const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
    const __m256i v = _mm256_blendv_epi8(rounded, _mm256_or_si256(u, quiet), is_nan);
    const __m256i hi = _mm256_srli_epi32(v, 16);
    // packus works within 128-bit lanes; the permute puts the 8 results in order.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(hi, hi), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_castsi256_si128(packed));
  }
#endif
  for (; i < n; ++i) dst[i] = core::float_to_bf16(src[i]);
}

void row_to_f32(Type type, const void* src, float* dst, int64_t n) {
  switch (type) {
    case Type::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case Type::kF16:
      f16_to_f32(static_cast<const Half*>(src), dst, n);
      return;
    case Type::kBF16:
      bf16_to_f32(static_cast<const BFloat16*>(src), dst, n);
      return;
    default:
      core::traits(type).to_float(src, dst, n);
      return;
  }
}

void row_from_f32(Type type, const float* src, void* dst, int64_t n) {
  switch (type) {
    case Type::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case Type::kF16:
      f32_to_f16(src, static_cast<Half*>(dst), n);
      return;
    case Type::kBF16:
      f32_to_bf16(src, static_cast<BFloat16*>(dst), n);
      return;
    default:
      core::traits(type).from_float(src, dst, n);
      return;
  }
}

void gather_to_f32(Type type, const uint8_t* src, size_t stride, float* dst, int64_t n) {
  if (stride == core::type_size(type)) {
    row_to_f32(type, src, dst, n);
    return;
  }
  const core::ToFloatFn to_float = core::traits(type).to_float;
  for (int64_t i = 0; i < n; ++i) to_float(src + static_cast<size_t>(i) * stride, dst + i, 1);
}

void scatter_from_f32(Type type, const float* src, uint8_t* dst, size_t stride, int64_t n) {
  if (stride == core::type_size(type)) {
    row_from_f32(type, src, dst, n);
    return;
  }
  const core::FromFloatFn from_float = core::traits(type).from_float;
  for (int64_t i = 0; i < n; ++i) from_float(src + i, dst + static_cast<size_t>(i) * stride, 1);
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
