// Dot products of float rows: f32·f32, f16·f16 and bf16·bf16, accumulated in f32.
//
// The order of the additions is llama.cpp's (AVX-512 build), so logits agree with its to the
// last bit rather than to rounding noise; on models where one last-bit difference flips a later
// f16 or int8 rounding, that is the difference between matching and not. Two orders:
//  - k a multiple of 16 (its prompt-processing GEMM): 16 lanes, element j into lane j % 16 by
//    fused multiply-adds in order; then the 16 lanes summed as a 512-bit tree (simd::hsum16).
//    bf16 with AVX-512 BF16 goes 32 elements a step through vdpbf16ps (lane l takes elements
//    2l + 1 then 2l of each step), as its BF16 GEMM does.
//  - other k (its vector dot): 4 x 16 lanes over the first k & ~63 elements, the 4 vectors
//    added (0+2, 1+3, then those two), the tree sum, then the remaining elements one at a time:
//    f32 products rounded and added in f32 (but fused for the last k % 8, as its compiled loop
//    does), f16 as exact products added in double. bf16 has its own two-accumulator shape
//    (dot_odd_bf16), and with AVX-512 BF16 takes it for every k not a multiple of 32.
// Both depend only on k and the two rows, as dot.h requires. Attention rows (k = cells) are
// padded to a multiple of 32 cells by the engine, as llama.cpp pads its KV view.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/float16.h"
#include "cpu/kernels/dot.h"
#include "cpu/kernels/dot_packed.h"
#include "cpu/kernels/dot_tile.h"
#include "cpu/kernels/kernel_args.h"
#include "cpu/kernels/simd.h"

#if defined(STRATA_CPU_AVX2) && defined(__AVX512F__)
#define STRATA_DOT_FLOAT_512 1
#endif
#if defined(STRATA_DOT_FLOAT_512) && defined(__AVX512BF16__)
#define STRATA_DOT_BF16_PAIRS 1
#endif

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

// How to read elements of each row type as f32. Conversions from f16/bf16 are exact.
struct F32Elem {
  static constexpr bool kExactProducts = false;
  static constexpr int64_t kSize = 4;
  static float at(const uint8_t* row, int64_t i) {
    float v;
    std::memcpy(&v, row + i * 4, sizeof v);
    return v;
  }
#if defined(STRATA_DOT_FLOAT_512)
  static __m512 load16(const uint8_t* row, int64_t i) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + i);
  }
#elif defined(STRATA_CPU_AVX2)
  static __m256 load8(const uint8_t* row, int64_t i) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + i);
  }
#endif
};

struct F16Elem {
  static constexpr bool kExactProducts = true;
  static constexpr int64_t kSize = 2;
  static float at(const uint8_t* row, int64_t i) {
    core::Half h;
    std::memcpy(&h, row + i * 2, sizeof h);
    return core::half_to_float(h);
  }
#if defined(STRATA_DOT_FLOAT_512)
  static __m512 load16(const uint8_t* row, int64_t i) {
    return _mm512_maskz_cvtph_ps(0xffff,
                                 _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + i * 2)));
  }
#elif defined(STRATA_CPU_AVX2)
  static __m256 load8(const uint8_t* row, int64_t i) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + i * 2)));
  }
#endif
};

struct BF16Elem {
  static constexpr bool kExactProducts = true;
  static constexpr int64_t kSize = 2;
  static float at(const uint8_t* row, int64_t i) {
    core::BFloat16 h;
    std::memcpy(&h, row + i * 2, sizeof h);
    return core::bf16_to_float(h);
  }
#if defined(STRATA_DOT_FLOAT_512)
  static __m512 load16(const uint8_t* row, int64_t i) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + i * 2));
    // Zero-masked forms: GCC 12 flags the unmasked ones as maybe-uninitialized.
    return _mm512_castsi512_ps(
        _mm512_maskz_slli_epi32(0xffff, _mm512_maskz_cvtepu16_epi32(0xffff, h), 16));
  }
#elif defined(STRATA_CPU_AVX2)
  static __m256 load8(const uint8_t* row, int64_t i) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + i * 2));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
#endif
};

#if defined(STRATA_CPU_AVX2)
// 16 lanes: one 512-bit register, or two 256-bit ones (lanes 0-7, 8-15) without AVX-512.
struct Lanes16 {
#if defined(STRATA_DOT_FLOAT_512)
  __m512 v;
  static Lanes16 zero() {
    return {_mm512_setzero_ps()};
  }
  template <class Elem>
  static Lanes16 load(const uint8_t* row, int64_t i) {
    return {Elem::load16(row, i)};
  }
  static Lanes16 fma(Lanes16 a, Lanes16 b, Lanes16 c) {
    return {_mm512_fmadd_ps(a.v, b.v, c.v)};
  }
  static Lanes16 add(Lanes16 a, Lanes16 b) {
    return {_mm512_add_ps(a.v, b.v)};
  }
  float sum() const {
    return simd::hsum16(v);
  }
#else
  __m256 lo, hi;
  static Lanes16 zero() {
    return {_mm256_setzero_ps(), _mm256_setzero_ps()};
  }
  template <class Elem>
  static Lanes16 load(const uint8_t* row, int64_t i) {
    return {Elem::load8(row, i), Elem::load8(row, i + 8)};
  }
  static Lanes16 fma(Lanes16 a, Lanes16 b, Lanes16 c) {
    return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
  }
  static Lanes16 add(Lanes16 a, Lanes16 b) {
    return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)};
  }
  float sum() const {
    return simd::hsum16(lo, hi);
  }
#endif
};
#endif

#if defined(STRATA_CPU_AVX2)
// Halves i .. i + n - 1 of an f16 row (n <= 8) as f32, converted by the hardware; lanes past n
// are zero, and a short step reads only its own bytes.
__m256 halves8(const uint8_t* row, int64_t i, int64_t n) {
  if (n == 8)
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + i * 2)));
  uint16_t h[8] = {};
  std::memcpy(h, row + i * 2, static_cast<size_t>(n) * 2);
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)));
}
#endif

// The vector-dot order for k not a multiple of 16 (rare: small heads, odd FFN sizes).
template <class Elem>
float dot_odd(int64_t k, const uint8_t* w, const uint8_t* a) {
  const int64_t np = k & ~int64_t{63};
  float reduced = 0.0f;
  if (np > 0) {
#if defined(STRATA_CPU_AVX2)
    Lanes16 s[4] = {Lanes16::zero(), Lanes16::zero(), Lanes16::zero(), Lanes16::zero()};
    for (int64_t i = 0; i < np; i += 64) {
      for (int j = 0; j < 4; ++j) {
        s[j] = Lanes16::fma(Lanes16::load<Elem>(w, i + 16 * j), Lanes16::load<Elem>(a, i + 16 * j),
                            s[j]);
      }
    }
    reduced = Lanes16::add(Lanes16::add(s[0], s[2]), Lanes16::add(s[1], s[3])).sum();
#else
    float s[4][16] = {};
    for (int64_t i = 0; i < np; i += 64) {
      for (int j = 0; j < 4; ++j) {
        for (int l = 0; l < 16; ++l) {
          const int64_t e = i + 16 * j + l;
          s[j][l] = std::fma(Elem::at(w, e), Elem::at(a, e), s[j][l]);
        }
      }
    }
    float t[16];
    for (int l = 0; l < 16; ++l) t[l] = (s[0][l] + s[2][l]) + (s[1][l] + s[3][l]);
    reduced = simd::lane_tree16(t);
#endif
  }
  if constexpr (Elem::kExactProducts) {
    double sum = reduced;
#if defined(STRATA_CPU_AVX2)
    if constexpr (std::is_same_v<Elem, F16Elem>) {
      // Eight elements at a time converted by the hardware (short rows, such as heads of 8,
      // spend their time here): the products are exact in f32 and still added one by one.
      for (int64_t i = np; i < k; i += 8) {
        const int64_t n = std::min<int64_t>(8, k - i);
        const __m256 p = _mm256_mul_ps(halves8(w, i, n), halves8(a, i, n));
        float ps[8];
        _mm256_storeu_ps(ps, p);
        for (int64_t j = 0; j < n; ++j) sum += static_cast<double>(ps[j]);
      }
      return static_cast<float>(sum);
    }
#endif
    for (int64_t i = np; i < k; ++i) sum += static_cast<double>(Elem::at(w, i) * Elem::at(a, i));
    return static_cast<float>(sum);
  } else {
    // llama.cpp's compiled loop (GCC, AVX-512) keeps the order but splits the remainder: runs of
    // 16, then one of 8, take products rounded to f32 and added one at a time; the last k % 8
    // elements are fused multiply-adds.
    float sum = reduced;
    const int64_t unfused_end = np + ((k - np) & ~int64_t{7});
    int64_t i = np;
    for (; i < unfused_end; ++i) sum += Elem::at(w, i) * Elem::at(a, i);
    for (; i < k; ++i) sum = std::fma(Elem::at(w, i), Elem::at(a, i), sum);
    return sum;
  }
}

// llama.cpp's bf16 vector dot, which has its own shape: two accumulators over the first 64-element
// steps (vdpbf16ps, 32 elements each) or, without AVX-512 BF16, 32-element steps (16 lanes of
// fused multiply-adds each); each accumulator's tree sum is added in double, then the rest.
float dot_odd_bf16(int64_t k, const uint8_t* w, const uint8_t* a) {
  double sum = 0.0;
#if defined(STRATA_DOT_BF16_PAIRS)
  const int64_t np = k & ~int64_t{63};
  __m512 c1 = _mm512_setzero_ps();
  __m512 c2 = _mm512_setzero_ps();
  for (int64_t i = 0; i < np; i += 64) {
    const auto* wp = w + i * 2;
    const auto* ap = a + i * 2;
    c1 = _mm512_dpbf16_ps(c1, reinterpret_cast<__m512bh>(_mm512_loadu_si512(wp)),
                          reinterpret_cast<__m512bh>(_mm512_loadu_si512(ap)));
    c2 = _mm512_dpbf16_ps(c2, reinterpret_cast<__m512bh>(_mm512_loadu_si512(wp + 64)),
                          reinterpret_cast<__m512bh>(_mm512_loadu_si512(ap + 64)));
  }
  sum += simd::hsum16(c1);
  sum += simd::hsum16(c2);
#elif defined(STRATA_CPU_AVX2)
  const int64_t np = k & ~int64_t{31};
  Lanes16 c1 = Lanes16::zero();
  Lanes16 c2 = Lanes16::zero();
  for (int64_t i = 0; i < np; i += 32) {
    c1 = Lanes16::fma(Lanes16::load<BF16Elem>(w, i), Lanes16::load<BF16Elem>(a, i), c1);
    c2 = Lanes16::fma(Lanes16::load<BF16Elem>(w, i + 16), Lanes16::load<BF16Elem>(a, i + 16), c2);
  }
  sum += c1.sum();
  sum += c2.sum();
#else
  const int64_t np = k & ~int64_t{31};
  float c[2][16] = {};
  for (int64_t i = 0; i < np; i += 32) {
    for (int h = 0; h < 2; ++h) {
      for (int l = 0; l < 16; ++l) {
        const int64_t e = i + 16 * h + l;
        c[h][l] = std::fma(BF16Elem::at(w, e), BF16Elem::at(a, e), c[h][l]);
      }
    }
  }
  sum += simd::lane_tree16(c[0]);
  sum += simd::lane_tree16(c[1]);
#endif
  for (int64_t i = np; i < k; ++i) {
    sum += static_cast<double>(BF16Elem::at(w, i) * BF16Elem::at(a, i));
  }
  return static_cast<float>(sum);
}

template <class Elem>
float dot_vector_order(int64_t k, const uint8_t* w, const uint8_t* a) {
  if constexpr (std::is_same_v<Elem, BF16Elem>) {
    return dot_odd_bf16(k, w, a);
  } else {
    return dot_odd<Elem>(k, w, a);
  }
}

#if defined(STRATA_CPU_AVX2)
// Four f16 rows against `na` (1 or 2) columns, k < 64: each dot is dot_odd's (the exact f32
// products added one by one in double), but they run side by side, one double lane each, so
// short rows (attention scores of heads of 8 or 32) cost a few vector steps per tile instead
// of a scalar dot each. With one column its lanes are computed twice and kept once.
void short_f16_tile(int64_t k, const uint8_t* w, size_t ldw, const uint8_t* a, size_t lda, int na,
                    float* out, int64_t ldo_w, int64_t ldo_a) {
  if (na == 1) lda = 0;
    // Lane c * 4 + r: row r against column c (two halves of four without AVX-512).
#if defined(STRATA_DOT_FLOAT_512)
  __m512d acc = _mm512_setzero_pd();
#else
  __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
#endif
  for (int64_t i = 0; i < k; i += 8) {
    const int64_t n = std::min<int64_t>(8, k - i);
    const __m256 r0 = halves8(w, i, n), r1 = halves8(w + ldw, i, n);
    const __m256 r2 = halves8(w + 2 * ldw, i, n), r3 = halves8(w + 3 * ldw, i, n);
    // u[j] holds element j of the four rows in its low half and element j + 4 in its high one.
    const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    const __m256 u[4] = {_mm256_shuffle_ps(t0, t2, 0x44), _mm256_shuffle_ps(t0, t2, 0xee),
                         _mm256_shuffle_ps(t1, t3, 0x44), _mm256_shuffle_ps(t1, t3, 0xee)};
    float a0[8], a1[8];
    _mm256_storeu_ps(a0, halves8(a, i, n));
    _mm256_storeu_ps(a1, halves8(a + lda, i, n));
    for (int64_t j = 0; j < n; ++j) {
      const __m256 rows = j < 4 ? _mm256_permute2f128_ps(u[j], u[j], 0x00)
                                : _mm256_permute2f128_ps(u[j - 4], u[j - 4], 0x11);
      const __m256 cols = _mm256_set_m128(_mm_set1_ps(a1[j]), _mm_set1_ps(a0[j]));
      const __m256 p = _mm256_mul_ps(rows, cols);
#if defined(STRATA_DOT_FLOAT_512)
      acc = _mm512_add_pd(acc, _mm512_maskz_cvtps_pd(0xff, p));
#else
      acc0 = _mm256_add_pd(acc0, _mm256_cvtps_pd(_mm256_castps256_ps128(p)));
      acc1 = _mm256_add_pd(acc1, _mm256_cvtps_pd(_mm256_extractf128_ps(p, 1)));
#endif
    }
  }
  double s[8];
#if defined(STRATA_DOT_FLOAT_512)
  _mm512_storeu_pd(s, acc);
#else
  _mm256_storeu_pd(s, acc0);
  _mm256_storeu_pd(s + 4, acc1);
#endif
  for (int c = 0; c < na; ++c) {
    for (int r = 0; r < 4; ++r) out[r * ldo_w + c * ldo_a] = static_cast<float>(s[c * 4 + r]);
  }
}
#endif

#if defined(STRATA_DOT_FLOAT_512)
/// Each tile output's 16 lanes summed as simd::hsum16 sums them, four registers at a time: half
/// the instructions of separate sums, which matters where rows are short (attention scores).
template <int NW, int NA, class Lanes>
[[gnu::always_inline]] inline void store_lane_sums(Lanes lanes, float* out, int64_t ldo_w,
                                                   int64_t ldo_a) {
  constexpr int kPairs = NW * NA;
  const auto at = [&](int q) { return lanes(q / NA, q % NA); };
  for (int q = 0; q + 4 <= kPairs; q += 4) {
    float s[4];
    simd::hsum16x4(at(q), at(q + 1), at(q + 2), at(q + 3), s);
    for (int j = 0; j < 4; ++j) out[(q + j) / NA * ldo_w + (q + j) % NA * ldo_a] = s[j];
  }
  for (int q = kPairs / 4 * 4; q < kPairs; ++q) {
    out[q / NA * ldo_w + q % NA * ldo_a] = simd::hsum16(at(q));
  }
}
#endif

// Weight rows of Elem against activation rows of AElem. The packed f16 path (below) reads
// activations that were rounded to f16 but are held as f32: the same exact values, so the same
// bits, without converting each activation vector again for every weight tile. kPrefetch asks
// for a later tile's rows as it goes (DotKernels::cached_tile is the form without).
template <class Elem, class AElem = Elem, bool kPrefetch = true>
struct FloatDot {
  template <int NW, int NA>
  static void run(int64_t k, const uint8_t* w, size_t ldw, const uint8_t* a, size_t lda, float* out,
                  int64_t ldo_w, int64_t ldo_a) {
    if constexpr (std::is_same_v<Elem, AElem>) {
#if defined(STRATA_CPU_AVX2)
      if constexpr (std::is_same_v<Elem, F16Elem> && NW == 4 && NA <= 2) {
        if (k < 64 && k % 16 != 0) {
          short_f16_tile(k, w, ldw, a, lda, NA, out, ldo_w, ldo_a);
          return;
        }
      }
#endif
      if (k % 16 != 0) {
        for (int r = 0; r < NW; ++r) {
          for (int c = 0; c < NA; ++c) {
            out[r * ldo_w + c * ldo_a] = dot_vector_order<Elem>(k, w + r * ldw, a + c * lda);
          }
        }
        return;
      }
    }
#if defined(STRATA_CPU_AVX2)
    Lanes16 acc[NW][NA];
    for (int r = 0; r < NW; ++r) {
      for (int c = 0; c < NA; ++c) acc[r][c] = Lanes16::zero();
    }
    const uint8_t* next = simd::prefetch_origin(w, NW * ldw);
    // Rows of a strided view (attention's K: one head's part of each cache row) leave gaps
    // that a dense step of the later tile would ask for instead of its rows: ask for each of
    // that tile's rows whole, once.
    const size_t row_bytes = static_cast<size_t>(k) * Elem::kSize;
    const bool strided = ldw > row_bytes;
    if (kPrefetch && strided) {
      for (int r = 0; r < NW; ++r) {
        for (size_t b = 0; b < row_bytes; b += 64) simd::prefetch_stream(next + r * ldw + b);
      }
    }
    for (int64_t i = 0; i < k; i += 16) {
      if (kPrefetch && !strided) {
        simd::prefetch_tile_ahead<16 * Elem::kSize * NW>(next,
                                                         static_cast<size_t>(i * Elem::kSize * NW));
      }
      if constexpr (std::is_same_v<Elem, AElem>) {
        Lanes16 av[NA];
        for (int c = 0; c < NA; ++c) av[c] = Lanes16::load<AElem>(a + c * lda, i);
        for (int r = 0; r < NW; ++r) {
          const Lanes16 wv = Lanes16::load<Elem>(w + r * ldw, i);
          for (int c = 0; c < NA; ++c) acc[r][c] = Lanes16::fma(wv, av[c], acc[r][c]);
        }
      } else {
        // Activations cost only a load here: convert the weight vectors, then take the
        // activation rows one at a time, each feeding every weight row.
        Lanes16 wv[NW];
        for (int r = 0; r < NW; ++r) wv[r] = Lanes16::load<Elem>(w + r * ldw, i);
        for (int c = 0; c < NA; ++c) {
          const Lanes16 av = Lanes16::load<AElem>(a + c * lda, i);
          for (int r = 0; r < NW; ++r) acc[r][c] = Lanes16::fma(wv[r], av, acc[r][c]);
        }
      }
    }
#if defined(STRATA_DOT_FLOAT_512)
    store_lane_sums<NW, NA>([&](int r, int c) { return acc[r][c].v; }, out, ldo_w, ldo_a);
#else
    for (int r = 0; r < NW; ++r) {
      for (int c = 0; c < NA; ++c) out[r * ldo_w + c * ldo_a] = acc[r][c].sum();
    }
#endif
#else
    for (int r = 0; r < NW; ++r) {
      for (int c = 0; c < NA; ++c) {
        float lane[16] = {};
        for (int64_t j = 0; j < k; ++j) {
          lane[j % 16] =
              std::fma(Elem::at(w + r * ldw, j), AElem::at(a + c * lda, j), lane[j % 16]);
        }
        out[r * ldo_w + c * ldo_a] = simd::lane_tree16(lane);
      }
    }
#endif
  }
};

// Every k in the vector-dot order (see DotKernels::vector_order_tile).
template <class Elem>
struct FloatVectorOrderDot {
  template <int NW, int NA>
  static void run(int64_t k, const uint8_t* w, size_t ldw, const uint8_t* a, size_t lda, float* out,
                  int64_t ldo_w, int64_t ldo_a) {
    for (int r = 0; r < NW; ++r) {
      for (int c = 0; c < NA; ++c) {
        out[r * ldo_w + c * ldo_a] = dot_vector_order<Elem>(k, w + r * ldw, a + c * lda);
      }
    }
  }
};

#if defined(STRATA_DOT_BF16_PAIRS)
/// A slice's 16-lane accumulators: from zero for the first slice, else from `lanes`.
template <int NW, int NA>
[[gnu::always_inline]] inline void begin_slice(int64_t k0, const float* lanes,
                                               __m512 (&acc)[NW][NA]) {
  for (int r = 0; r < NW; ++r) {
    for (int c = 0; c < NA; ++c) {
      acc[r][c] = k0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(lanes + (r * NA + c) * 16);
    }
  }
}

/// The outputs' sums after the last slice, else the lanes kept for the next.
template <int NW, int NA>
[[gnu::always_inline]] inline void end_slice(int64_t k, int64_t k1, __m512 (&acc)[NW][NA],
                                             float* lanes, float* out, int64_t ldo_w,
                                             int64_t ldo_a) {
  if (k1 == k) {
    store_lane_sums<NW, NA>([&](int r, int c) { return acc[r][c]; }, out, ldo_w, ldo_a);
    return;
  }
  for (int r = 0; r < NW; ++r) {
    for (int c = 0; c < NA; ++c) _mm512_storeu_ps(lanes + (r * NA + c) * 16, acc[r][c]);
  }
}

// bf16 with vdpbf16ps, 32 elements a step (k a multiple of 32).
template <bool kPrefetch = true>
struct BF16PairDot {
  template <int NW, int NA>
  [[gnu::always_inline]] static void accumulate(int64_t i0, int64_t i1, const uint8_t* w,
                                                size_t ldw, const uint8_t* a, size_t lda,
                                                __m512 (&acc)[NW][NA]) {
    [[maybe_unused]] const uint8_t* next = simd::prefetch_origin(w, NW * ldw);
    for (int64_t i = i0; i < i1; i += 32) {
      if (kPrefetch) simd::prefetch_tile_ahead<64 * NW>(next, static_cast<size_t>(i * 2 * NW));
      __m512bh av[NA];
      for (int c = 0; c < NA; ++c) {
        av[c] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(a + c * lda + i * 2));
      }
      for (int r = 0; r < NW; ++r) {
        const auto wv = reinterpret_cast<__m512bh>(_mm512_loadu_si512(w + r * ldw + i * 2));
        for (int c = 0; c < NA; ++c) acc[r][c] = _mm512_dpbf16_ps(acc[r][c], wv, av[c]);
      }
    }
  }

  template <int NW, int NA>
  static void run(int64_t k, const uint8_t* w, size_t ldw, const uint8_t* a, size_t lda, float* out,
                  int64_t ldo_w, int64_t ldo_a) {
    if (k % 32 != 0) {  // llama.cpp's BF16 GEMM steps 32 elements; other k take its vector dot
      for (int r = 0; r < NW; ++r) {
        for (int c = 0; c < NA; ++c) {
          out[r * ldo_w + c * ldo_a] = dot_odd_bf16(k, w + r * ldw, a + c * lda);
        }
      }
      return;
    }
    __m512 acc[NW][NA];
    begin_slice<NW, NA>(0, nullptr, acc);
    accumulate<NW, NA>(0, k, w, ldw, a, lda, acc);
    store_lane_sums<NW, NA>([&](int r, int c) { return acc[r][c]; }, out, ldo_w, ldo_a);
  }

  // A DotSliceFn (k a multiple of 32).
  template <int NW, int NA>
  static void slice(int64_t k, int64_t k0, int64_t k1, const uint8_t* w, size_t ldw,
                    const uint8_t* a, size_t lda, float* lanes, float* out, int64_t ldo_w,
                    int64_t ldo_a) {
    __m512 acc[NW][NA];
    begin_slice<NW, NA>(k0, lanes, acc);
    accumulate<NW, NA>(k0, k1, w, ldw, a, lda, acc);
    end_slice<NW, NA>(k, k1, acc, lanes, out, ldo_w, ldo_a);
  }
};
using BF16Dot = BF16PairDot<>;
using BF16CachedDot = BF16PairDot<false>;
#else
using BF16Dot = FloatDot<BF16Elem>;
using BF16CachedDot = FloatDot<BF16Elem, BF16Elem, false>;
#endif

#if defined(STRATA_DOT_BF16_PAIRS)
constexpr bool kBF16ActTilesOuter = true;
#else
constexpr bool kBF16ActTilesOuter = false;
#endif

// 4 weight rows x 6 activation rows with AVX-512 (24 of its 32 registers): enough independent
// accumulator chains to keep both FMA (or vdpbf16ps) pipes busy through their latency, and each
// loaded (and converted) vector feeds 4 or 6 of them. Without AVX-512 a Lanes16 takes two of
// the 16 registers, so 4 x 2.
constexpr int kMaxW = 4;
#if defined(STRATA_DOT_FLOAT_512)
constexpr int kMaxA = 6;
#else
constexpr int kMaxA = 2;
#endif

#if defined(STRATA_DOT_FLOAT_512)
// The packed f16 path: activations rounded to f16 once and held as f32 (the f16 values
// exactly), so a tile converts only its weight vectors: 4 per 24 fused multiply-adds instead
// of 10. vcvtph2ps takes two cycles of its port on AMD Zen 4, and the conversions had become
// a second bound beside the FMAs (MulMatPrefill/f16 98 -> 105 GFLOP/s on one core, about 95%
// of its FMA peak). Tiles of 3 x 8 convert fewer still but were slower (89): each activation
// vector, now twice the bytes, is then read by fewer weight rows.
constexpr int kPackedF16MaxW = 4;
constexpr int kPackedF16MaxA = 6;

size_t packed_f16_row_bytes(int64_t k) {
  return align_up(static_cast<size_t>(k) * sizeof(float));
}

void pack_f16_rounded(const float* src, uint8_t* dst, int64_t k) {
  auto* out = reinterpret_cast<float*>(dst);
  for (int64_t i = 0; i < k; i += 16) {
    // Zero-masked forms: GCC 12 flags the unmasked ones as maybe-uninitialized.
    const __m256i h =
        _mm512_maskz_cvtps_ph(0xffff, _mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm512_store_ps(out + i, _mm512_maskz_cvtph_ps(0xffff, h));
  }
}

const PackedDot kPackedF16 = {
    .max_w = kPackedF16MaxW,
    .max_a = kPackedF16MaxA,
    .group = 16,  // one 512-bit register of f32
    .act_row_bytes = packed_f16_row_bytes,
    .pack = pack_f16_rounded,
    .tile = tile_dispatch<FloatDot<F16Elem, F32Elem>, kPackedF16MaxW, kPackedF16MaxA>,
    .act_tiles_outer = true,
    .cached_tile = tile_dispatch<FloatDot<F16Elem, F32Elem, false>, kPackedF16MaxW, kPackedF16MaxA>,
    .zero_tail_step = 16,
};

// Short f16 rows (k <= 128: prompt attention scores, one head's K against its queries). A tile
// of FloatDot's spends more on its 24 lane trees and its chains of k / 16 dependent FMAs than on
// the products (about a third of the long-row rate per core). Here sixteen rows lie in the
// lanes of a panel, transposed once per chunk: lane sum l of the sixteen rows is one register,
// k / 16 FMAs of broadcast activations, and the tree is vertical adds. The same operations per
// output in the same order (lane l takes elements l, l + 16, ... by fused multiply-adds from
// zero; then (l, l + 8), then (+4), then (0, 2) and (1, 3), then the two), so the same bits.
constexpr int64_t kShortMaxK = 128;
constexpr int kShortRows = 16;
constexpr int kShortMaxA = 4;

size_t short_panel_bytes(int64_t k) {
  return static_cast<size_t>(k) * kShortRows * sizeof(float);
}

// Panel element [j][r]: element j of row r (rows past nw repeat the last: their lanes are
// computed and never stored).
void pack_short_panel(int64_t k, const uint8_t* w, size_t ldw, int nw, uint8_t* panel) {
  auto* out = reinterpret_cast<float*>(panel);
  alignas(64) float row[kShortMaxK];
  for (int r = 0; r < kShortRows; ++r) {
    const uint8_t* src = w + static_cast<size_t>(std::min(r, nw - 1)) * ldw;
    for (int64_t j = 0; j < k; j += 16) _mm512_store_ps(row + j, F16Elem::load16(src, j));
    for (int64_t j = 0; j < k; ++j) out[j * kShortRows + r] = row[j];
  }
}

template <int NA>
void short_panel_run(int64_t k, const float* panel, int nw, const uint8_t* a, size_t lda,
                     float* out, int64_t ldo_w, int64_t ldo_a) {
  const float* x[NA];
  for (int c = 0; c < NA; ++c) x[c] = reinterpret_cast<const float*>(a + c * lda);
  // Up to four activation rows share each panel load (a broadcast and a multiply-add each):
  // the first two tree levels' sums wait in memory, so the 4 NA chains have the registers.
  alignas(64) float t4[NA][4][16];
  // Lane sums i, i + 4, i + 8 and i + 12 together (4 NA chains side by side), which the tree's
  // first two levels add into t4[i].
  for (int i = 0; i < 4; ++i) {
    __m512 acc[NA][4];
    for (int c = 0; c < NA; ++c) {
      for (int q = 0; q < 4; ++q) acc[c][q] = _mm512_setzero_ps();
    }
    for (int64_t j0 = i; j0 < k; j0 += 16) {
      for (int q = 0; q < 4; ++q) {
        const int64_t j = j0 + 4 * q;
        const __m512 wv = _mm512_load_ps(panel + j * kShortRows);
        for (int c = 0; c < NA; ++c) {
          acc[c][q] = _mm512_fmadd_ps(wv, _mm512_set1_ps(x[c][j]), acc[c][q]);
        }
      }
    }
    for (int c = 0; c < NA; ++c) {
      _mm512_store_ps(t4[c][i], _mm512_add_ps(_mm512_add_ps(acc[c][0], acc[c][2]),
                                              _mm512_add_ps(acc[c][1], acc[c][3])));
    }
  }
  for (int c = 0; c < NA; ++c) {
    const auto t = [&](int i) { return _mm512_load_ps(t4[c][i]); };
    const __m512 sum = _mm512_add_ps(_mm512_add_ps(t(0), t(2)), _mm512_add_ps(t(1), t(3)));
    simd::store_first(out + c * ldo_a, sum, nw, ldo_w);
  }
}

void short_panel_tile(int64_t k, const uint8_t* w, size_t, int nw, const uint8_t* a, size_t lda,
                      int na, float* out, int64_t ldo_w, int64_t ldo_a) {
  const auto* panel = reinterpret_cast<const float*>(w);
  switch (na) {
    case 4:
      return short_panel_run<4>(k, panel, nw, a, lda, out, ldo_w, ldo_a);
    case 3:
      return short_panel_run<3>(k, panel, nw, a, lda, out, ldo_w, ldo_a);
    case 2:
      return short_panel_run<2>(k, panel, nw, a, lda, out, ldo_w, ldo_a);
    default:
      return short_panel_run<1>(k, panel, nw, a, lda, out, ldo_w, ldo_a);
  }
}

// Rows read in place (few activation rows): FloatDot's tiles four rows at a time.
void short_rows_tile(int64_t k, const uint8_t* w, size_t ldw, int nw, const uint8_t* a, size_t lda,
                     int na, float* out, int64_t ldo_w, int64_t ldo_a) {
  for (int r = 0; r < nw; r += kPackedF16MaxW) {
    kPackedF16.tile(k, w + r * ldw, ldw, std::min(kPackedF16MaxW, nw - r), a, lda, na,
                    out + r * ldo_w, ldo_w, ldo_a);
  }
}

const PackedDot kPackedF16Short = {
    .max_w = kShortRows,
    .max_a = kShortMaxA,
    .group = 16,
    .act_row_bytes = packed_f16_row_bytes,
    .pack = pack_f16_rounded,
    .tile = short_rows_tile,
    .panel_bytes = short_panel_bytes,
    .pack_panel = pack_short_panel,
    .panel_tile = short_panel_tile,
};
#endif

}  // namespace

const PackedDot* packed_dot_f16(core::Type weight_type, int64_t k) {
#if defined(STRATA_DOT_FLOAT_512)
  if (weight_type == core::Type::kF16 && k % 16 == 0) {
    return k <= kShortMaxK ? &kPackedF16Short : &kPackedF16;
  }
#else
  (void)weight_type;
  (void)k;
#endif
  return nullptr;
}

const DotKernels kDotF32 = {core::Type::kF32, kMaxW, kMaxA,
                            tile_dispatch<FloatDot<F32Elem>, kMaxW, kMaxA>,
                            tile_dispatch<FloatVectorOrderDot<F32Elem>, kMaxW, kMaxA>};
const DotKernels kDotF16 = {core::Type::kF16, kMaxW, kMaxA,
                            tile_dispatch<FloatDot<F16Elem>, kMaxW, kMaxA>,
                            tile_dispatch<FloatVectorOrderDot<F16Elem>, kMaxW, kMaxA>};
#if defined(STRATA_DOT_BF16_PAIRS)
// Slices of 2048 elements keep an activation tile's slice (6 rows, 24 KiB) in L1: tinyllama's
// FFN down projection (k 5632) had streamed both operands from L2 (MulMatPrefill/bf16/5632 on
// one Zen 5 core 47-50 -> 38-39 ms; within the noise on two). Slices of 1024 were slower, also
// for k 2048 (35 -> 42 ms): each slice restarts the weight rows' streams.
constexpr DotSlices kBF16Slices = {slice_dispatch<BF16CachedDot, kMaxW, kMaxA>, 2048, 32};
#else
constexpr DotSlices kBF16Slices = {};
#endif
// vdpbf16ps does 32 multiply-adds per instruction: streaming activation rows from L2 past a
// weight tile held the BF16 GEMM back (MulMatPrefill/bf16 1.15x faster walked the other way on
// an AMD Zen 5; the f16 and int8 kernels gained nothing).
const DotKernels kDotBF16 = {core::Type::kBF16,
                             kMaxW,
                             kMaxA,
                             tile_dispatch<BF16Dot, kMaxW, kMaxA>,
                             tile_dispatch<FloatVectorOrderDot<BF16Elem>, kMaxW, kMaxA>,
                             kBF16ActTilesOuter,
                             tile_dispatch<BF16CachedDot, kMaxW, kMaxA>,
                             kBF16Slices};

}  // namespace strata::cpu::STRATA_KERNEL_NS
