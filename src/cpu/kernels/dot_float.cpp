// Dot products of float rows: f32·f32, f16·f16 and bf16·bf16, all accumulated in f32.
#include <cstring>

#include "core/float16.h"
#include "cpu/kernels/dot.h"
#include "cpu/kernels/dot_tile.h"
#include "cpu/kernels/simd.h"

namespace strata::cpu {
namespace {

// How to read elements of each row type as f32. Conversions from f16/bf16 are exact.
struct F32Elem {
  static float at(const uint8_t* row, int64_t i) {
    float v;
    std::memcpy(&v, row + i * 4, sizeof v);
    return v;
  }
#if defined(STRATA_CPU_AVX2)
  static __m256 load8(const uint8_t* row, int64_t i) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + i);
  }
#endif
};

struct F16Elem {
  static float at(const uint8_t* row, int64_t i) {
    core::Half h;
    std::memcpy(&h, row + i * 2, sizeof h);
    return core::half_to_float(h);
  }
#if defined(STRATA_CPU_AVX2)
  static __m256 load8(const uint8_t* row, int64_t i) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + i * 2)));
  }
#endif
};

struct BF16Elem {
  static float at(const uint8_t* row, int64_t i) {
    core::BFloat16 h;
    std::memcpy(&h, row + i * 2, sizeof h);
    return core::bf16_to_float(h);
  }
#if defined(STRATA_CPU_AVX2)
  static __m256 load8(const uint8_t* row, int64_t i) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + i * 2));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
#endif
};

// Per pair: one 8-lane f32 accumulator; the tail is zero-padded into the same lanes, so element
// j always lands in lane j % 8 and the lanes are summed in a fixed order. Appending zeros to
// both rows (a longer masked attention row) therefore leaves the result bit-identical, which
// keeps micro-batched prefill equal to one big batch. Tail multiplies and adds are separate
// roundings in the portable path (the layer builds with -ffp-contract=off).
template <class Elem>
struct FloatDot {
  template <int NW, int NA>
  static void run(int64_t k, const uint8_t* w, size_t ldw, const uint8_t* a, size_t lda, float* out,
                  int64_t ldo_w, int64_t ldo_a) {
#if defined(STRATA_CPU_AVX2)
    __m256 acc[NW][NA];
    for (int r = 0; r < NW; ++r) {
      for (int c = 0; c < NA; ++c) acc[r][c] = _mm256_setzero_ps();
    }
    int64_t i = 0;
    for (; i + 8 <= k; i += 8) {
      __m256 av[NA];
      for (int c = 0; c < NA; ++c) av[c] = Elem::load8(a + c * lda, i);
      for (int r = 0; r < NW; ++r) {
        const __m256 wv = Elem::load8(w + r * ldw, i);
        for (int c = 0; c < NA; ++c) acc[r][c] = _mm256_fmadd_ps(wv, av[c], acc[r][c]);
      }
    }
    if (i < k) {
      alignas(32) float av[NA][8] = {};
      alignas(32) float wv[8] = {};
      for (int c = 0; c < NA; ++c) {
        for (int64_t j = i; j < k; ++j) av[c][j - i] = Elem::at(a + c * lda, j);
      }
      for (int r = 0; r < NW; ++r) {
        for (int64_t j = i; j < k; ++j) wv[j - i] = Elem::at(w + r * ldw, j);
        const __m256 wr = _mm256_load_ps(wv);
        for (int c = 0; c < NA; ++c) {
          acc[r][c] = _mm256_fmadd_ps(wr, _mm256_load_ps(av[c]), acc[r][c]);
        }
      }
    }
    for (int r = 0; r < NW; ++r) {
      for (int c = 0; c < NA; ++c) out[r * ldo_w + c * ldo_a] = simd::hsum(acc[r][c]);
    }
#else
    for (int r = 0; r < NW; ++r) {
      for (int c = 0; c < NA; ++c) {
        float s = 0.0f;
        for (int64_t j = 0; j < k; ++j) s += Elem::at(w + r * ldw, j) * Elem::at(a + c * lda, j);
        out[r * ldo_w + c * ldo_a] = s;
      }
    }
#endif
  }
};

// 4 weight rows x 2 activation rows: 8 independent accumulator chains hide the FMA latency,
// and the 16 vector registers of AVX2 hold them with the loads.
constexpr int kMaxW = 4;
constexpr int kMaxA = 2;

}  // namespace

const DotKernels kDotF32 = {core::Type::kF32, kMaxW, kMaxA,
                            tile_dispatch<FloatDot<F32Elem>, kMaxW, kMaxA>};
const DotKernels kDotF16 = {core::Type::kF16, kMaxW, kMaxA,
                            tile_dispatch<FloatDot<F16Elem>, kMaxW, kMaxA>};
const DotKernels kDotBF16 = {core::Type::kBF16, kMaxW, kMaxA,
                             tile_dispatch<FloatDot<BF16Elem>, kMaxW, kMaxA>};

}  // namespace strata::cpu
