// Lane-by-lane evaluation of dot products against a transposed float matrix.
//
// Gathering a transposed view into dense rows copies it element by element once per tile of
// rows. This walks down the columns instead, 16 outputs at a time, keeping for every output d
// the 16 accumulators the dense kernel would have: lane j % 16 of output d receives
// fma(w[j][d], a[j], lane) for j in increasing order, and the lanes are summed as the same
// tree. Each output therefore rounds exactly as in dot_float.cpp; only the loop order differs.
#include "cpu/kernels/dot_transposed.h"

#include <cmath>
#include <cstring>

#include "cpu/kernels/convert.h"
#include "cpu/kernels/simd.h"

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

constexpr int kLanes = 16;

#if defined(STRATA_CPU_AVX2) && defined(__AVX512F__)
__m512 load16(core::Type type, const uint8_t* p) {
  if (type == core::Type::kF32) return _mm512_loadu_ps(p);
  return _mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
#endif

}  // namespace

bool dot_transposed_supported(core::Type type, int64_t k) {
  return (type == core::Type::kF32 || type == core::Type::kF16) && k % kLanes == 0;
}

size_t dot_transposed_scratch(int64_t k, int64_t m) {
  return static_cast<size_t>(k + kLanes * m + m);
}

void dot_transposed_rows(core::Type type, int64_t k, int64_t m, const uint8_t* w, size_t col_stride,
                         const uint8_t* a, float* out, int64_t ldo, float* scratch) {
  const size_t es = core::type_size(type);
  float* act = scratch;  // a as f32 (exact), read once per block of outputs
  float* lanes = scratch + k;
  float* column = lanes + kLanes * m;
  row_to_f32(type, a, act, k);
  int64_t vec_m = 0;
#if defined(STRATA_CPU_AVX2) && defined(__AVX512F__)
  // 16 outputs at a time, their 16 lanes in 16 registers: cell j feeds register j % 16.
  vec_m = m / kLanes * kLanes;
  for (int64_t d = 0; d < vec_m; d += kLanes) {
    __m512 acc[kLanes];
    for (int l = 0; l < kLanes; ++l) acc[l] = _mm512_setzero_ps();
    const uint8_t* col = w + static_cast<size_t>(d) * es;
    for (int64_t j0 = 0; j0 < k; j0 += kLanes) {
      for (int l = 0; l < kLanes; ++l) {
        const int64_t j = j0 + l;
        acc[l] = _mm512_fmadd_ps(load16(type, col + static_cast<size_t>(j) * col_stride),
                                 _mm512_set1_ps(act[j]), acc[l]);
      }
    }
    __m512 t8[8], t4[4];
    for (int i = 0; i < 8; ++i) t8[i] = _mm512_add_ps(acc[i], acc[i + 8]);
    for (int i = 0; i < 4; ++i) t4[i] = _mm512_add_ps(t8[i], t8[i + 4]);
    const __m512 sum = _mm512_add_ps(_mm512_add_ps(t4[0], t4[2]), _mm512_add_ps(t4[1], t4[3]));
    alignas(64) float s[kLanes];
    _mm512_store_ps(s, sum);
    for (int i = 0; i < kLanes; ++i) out[(d + i) * ldo] = s[i];
  }
#endif
  if (vec_m == m) return;
  // The remaining outputs: the same lanes, kept in memory (lanes[l * m + d]).
  const int64_t rest = m - vec_m;
  std::memset(lanes, 0, static_cast<size_t>(kLanes * m) * sizeof(float));
  for (int64_t j = 0; j < k; ++j) {
    row_to_f32(type, w + static_cast<size_t>(j) * col_stride + static_cast<size_t>(vec_m) * es,
               column, rest);
    float* lane = lanes + (j % kLanes) * m;
    for (int64_t d = 0; d < rest; ++d) lane[d] = std::fma(column[d], act[j], lane[d]);
  }
  for (int64_t d = 0; d < rest; ++d) {
    float lane[kLanes];
    for (int l = 0; l < kLanes; ++l) lane[l] = lanes[l * m + d];
    out[(vec_m + d) * ldo] = simd::lane_tree16(lane);
  }
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
