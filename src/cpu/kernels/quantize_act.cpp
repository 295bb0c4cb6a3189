// Activation quantizers. q8_k follows core's reference step by step. q8_0 is llama.cpp's
// activation quantizer (its x86 one, not its reference): the multiplier is 127 / amax rather
// than 1 / (amax / 127) and ties round to even, which flips a few levels against the reference;
// matching it keeps our logits equal to llama.cpp's. Each element sees one product and one
// rounding either way, so only how many elements go per instruction changes.
#include "cpu/kernels/quantize_act.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/blocks.h"
#include "core/float16.h"
#include "core/quants/blocks_k.h"
#include "core/types.h"
#include "cpu/kernels/simd.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

using core::BlockQ8_0;
using core::BlockQ8_K;

#if defined(STRATA_CPU_AVX2)

inline __m256 abs_ps(__m256 v) {
  return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
}

// vmaxps returns its second operand when the first is NaN: the running maximum ignores NaN
// elements as std::max(amax, |x|) does, and the order of the lanes does not matter for the
// others.
inline __m256 max_abs(__m256 m, __m256 v) {
  return _mm256_max_ps(abs_ps(v), m);
}

// NaN lanes to +0 (the reference maps NaN to 0 before anything else).
inline __m256 nan_to_zero(__m256 v) {
  return _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));
}

// Sum of the 8 int32 lanes (exact).
inline int32_t hsum_epi32(__m256i v) {
  const __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i s2 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
  return _mm_cvtsi128_si32(_mm_add_epi32(s2, _mm_shuffle_epi32(s2, 1)));
}

// 32 int32 lanes (in four vectors, in order) to 32 int8 in order; values fit in int8.
inline __m256i pack_bytes(__m256i a, __m256i b, __m256i c, __m256i d) {
  // packs work within 128-bit halves; the permute restores the element order.
  const __m256i ab = _mm256_packs_epi32(a, b);
  const __m256i cd = _mm256_packs_epi32(c, d);
  const __m256i bytes = _mm256_packs_epi16(ab, cd);
  return _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

void q8_0_block(const float* x, BlockQ8_0& b) {
  __m256 v[4];
  __m256 m = _mm256_setzero_ps();
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm256_loadu_ps(x + 8 * i);
    m = max_abs(m, v[i]);
  }
  const float amax = simd::hmax(m);
  b.d = core::float_to_half(amax / 127.0f);
  const __m256 vid = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
  const __m256 lo = _mm256_set1_ps(-127.0f);
  const __m256 hi = _mm256_set1_ps(127.0f);
  __m256i q[4];
  for (int i = 0; i < 4; ++i) {
    const __m256 p = nan_to_zero(_mm256_mul_ps(v[i], vid));
    // Clamped to integers, ties to even under the default rounding mode.
    q[i] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(p, lo), hi));
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(b.qs), pack_bytes(q[0], q[1], q[2], q[3]));
}

void q8_k_block(const float* x, BlockQ8_K& b) {
  __m256 m = _mm256_setzero_ps();
  for (int i = 0; i < core::kQK_K; i += 8) m = max_abs(m, _mm256_loadu_ps(x + i));
  const float amax = simd::hmax(m);
  std::memset(&b, 0, sizeof b);
  if (amax == 0.0f) return;
  // The reference keeps the first element whose magnitude is the largest (a strict > scan).
  float max = 0.0f;
  for (int i = 0; i < core::kQK_K; i += 8) {
    const __m256 hit =
        _mm256_cmp_ps(abs_ps(_mm256_loadu_ps(x + i)), _mm256_set1_ps(amax), _CMP_EQ_OQ);
    const int mask = _mm256_movemask_ps(hit);
    if (mask != 0) {
      max = x[i + __builtin_ctz(static_cast<unsigned>(mask))];
      break;
    }
  }
  const float iscale = -127.0f / max;
  const __m256 vs = _mm256_set1_ps(iscale);
  const __m256 lo = _mm256_set1_ps(-128.0f);
  const __m256 hi = _mm256_set1_ps(127.0f);
  for (int g = 0; g < core::kQK_K; g += 32) {
    __m256i q[4];
    for (int i = 0; i < 4; ++i) {
      const __m256 p = nan_to_zero(_mm256_mul_ps(vs, _mm256_loadu_ps(x + g + 8 * i)));
      // Clamped to integers, ties to even under the default rounding mode: nearest_int.
      q[i] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(p, lo), hi));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(b.qs + g), pack_bytes(q[0], q[1], q[2], q[3]));
    const __m256i s01 = _mm256_add_epi32(q[0], q[1]);
    const __m256i s23 = _mm256_add_epi32(q[2], q[3]);
    b.bsums[g / 16] = static_cast<int16_t>(hsum_epi32(s01));
    b.bsums[g / 16 + 1] = static_cast<int16_t>(hsum_epi32(s23));
  }
  b.d = 1.0f / iscale;
}

#endif  // STRATA_CPU_AVX2

}  // namespace

void quantize_q8_0(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / core::kQK8_0; ++i) {
#if defined(STRATA_CPU_AVX2)
    q8_0_block(src + i * core::kQK8_0, b[i]);
#else
    q8_0_block_portable(src + i * core::kQK8_0, b[i]);
#endif
  }
}

void q8_0_block_portable(const float* x, core::BlockQ8_0& b) {
  float amax = 0.0f;
  for (int j = 0; j < core::kQK8_0; ++j) amax = std::max(amax, std::fabs(x[j]));
  b.d = core::float_to_half(amax / 127.0f);
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  for (int j = 0; j < core::kQK8_0; ++j) {
    float p = x[j] * id;
    if (std::isnan(p)) p = 0.0f;
    b.qs[j] = static_cast<int8_t>(std::nearbyint(std::clamp(p, -127.0f, 127.0f)));
  }
}

void quantize_q8_k(const float* src, void* dst, int64_t n) {
#if defined(STRATA_CPU_AVX2)
  auto* b = static_cast<BlockQ8_K*>(dst);
  for (int64_t i = 0; i < n / core::kQK_K; ++i) q8_k_block(src + i * core::kQK_K, b[i]);
#else
  core::traits(core::Type::kQ8_K).from_float(src, dst, n);
#endif
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
