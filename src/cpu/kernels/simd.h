// Vector helpers shared by the kernels, and the ISA switch they are compiled under.
//
// Kernels have an AVX2 (+FMA, F16C) path and a portable scalar path, picked at compile time
// with STRATA_CPU_AVX2. Wider paths slot in the same way: a new macro and a new branch beside
// the AVX2 one in the kernel files (simd_int.h defines the integer ones: STRATA_CPU_VNNI,
// STRATA_CPU_AVX512BW, STRATA_CPU_AVX512).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/float16.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define STRATA_CPU_AVX2 1
#include <immintrin.h>
#endif

namespace strata::cpu::STRATA_KERNEL_NS::simd {

/// The order of hsum16 in portable code: lane i + lane i + 8, then + 4, + 2, + 1.
inline float lane_tree16(const float* lane) {
  float t8[8], t4[4];
  for (int i = 0; i < 8; ++i) t8[i] = lane[i] + lane[i + 8];
  for (int i = 0; i < 4; ++i) t4[i] = t8[i] + t8[i + 4];
  return (t4[0] + t4[2]) + (t4[1] + t4[3]);
}

/// Asks for the cache line at p ahead of a streaming read of weights. Into L2, not L1: the
/// kernels ask a tile or several blocks ahead, farther than L1 can hold while the current
/// rows are read, and on AMD Zen 4 prefetches into L1 queue behind its few miss buffers: one
/// core then read a q4_0 matrix from memory at 9.9 GB/s with L1 prefetches and 19.8 GB/s with
/// these. Always inlined: GCC judges a call to a function that only prefetches free of
/// effects and deletes it.
[[gnu::always_inline]] inline void prefetch_stream(const void* p) {
  __builtin_prefetch(p, 0, 1);
}

// Decode's weight streams. A tile kernel reads its NW weight rows side by side: NW streams a row
// apart, which hardware prefetchers follow poorly. While it reads a step of its rows, it asks
// for the same share of a later tile's rows (tiles follow each other in memory) in address
// order, so memory sees one sequential stream ahead of the reads. On AMD Zen 4, one core read
// a q8_0 matrix from memory at 25.7 GB/s this way and at 13.8 GB/s with each row prefetched
// 6 KiB ahead of itself (q6_k 9.5 -> 20 GB/s, q5_k 13.5 -> 18). Prefetches never fault: past
// the matrix's end they only cost a little bandwidth.

/// How far ahead the stream runs at least: a tile of few short rows (q2_k, k = 2048: 2.7 KiB)
/// ends too soon to hide memory's latency. 32 KiB read best of 4, 16, 32 and 64 KiB (Zen 4).
inline constexpr size_t kPrefetchAhead = 32 * 1024;

/// The start of the first tile at least kPrefetchAhead bytes after the tile at w.
inline const uint8_t* prefetch_origin(const uint8_t* w, size_t tile_bytes) {
  return w + (kPrefetchAhead + tile_bytes - 1) / tile_bytes * tile_bytes;
}

/// The step of the tile at `origin` that matches the step being read: kBytes from `offset`,
/// where offset is NW times the step's offset within a row.
template <size_t kBytes>
[[gnu::always_inline]] inline void prefetch_tile_ahead(const void* origin, size_t offset) {
  const char* from = static_cast<const char*>(origin) + offset;
  for (size_t i = 0; i < kBytes; i += 64) prefetch_stream(from + i);
}

/// Asks for every line that starts within [p + ahead, p + ahead + bytes): called for each
/// block of a stream in order, it asks for each line once.
[[gnu::always_inline]] inline void prefetch_lines_ahead(const void* p, size_t bytes, size_t ahead) {
  const uintptr_t from = reinterpret_cast<uintptr_t>(p) + ahead;
  for (uintptr_t line = (from + 63) & ~uintptr_t{63}; line < from + bytes; line += 64) {
    prefetch_stream(reinterpret_cast<const void*>(line));
  }
}

#if defined(STRATA_CPU_AVX2)

/// An f16 scale as float, branch-free (same value as core::half_to_float: the conversion is exact).
inline float half_to_float(core::Half h) {
  return _cvtsh_ss(h.bits);
}

/// Sum of the 8 lanes, always in the same order (so equal inputs give equal bits).
inline float hsum(__m256 v) {
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const __m128 s1 = _mm_add_ss(s2, _mm_movehdup_ps(s2));
  return _mm_cvtss_f32(s1);
}

/// Sum of the 4 lanes, always in the same order.
inline double hsum(__m256d v) {
  const __m128d s2 = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s2, _mm_unpackhi_pd(s2, s2)));
}

/// Largest of the 8 lanes.
inline float hmax(__m256 v) {
  const __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 m2 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  return _mm_cvtss_f32(_mm_max_ss(m2, _mm_movehdup_ps(m2)));
}

/// Sum of 16 lanes held as two halves (lanes 0-7, 8-15), in the order of a 512-bit tree
/// reduction: lane i + lane i + 8, then + 4, + 2, + 1. llama.cpp sums its AVX-512 softmax
/// chunks and dot-product lanes this way; results that must match it bit for bit use this.
inline float hsum16(__m256 lo, __m256 hi) {
  return hsum(_mm256_add_ps(lo, hi));
}

/// Stores lanes 0..n-1 of v (n <= 8), lane i at p[i * stride].
[[gnu::always_inline]] inline void store_first(float* p, __m256 v, int n, int64_t stride = 1) {
  if (stride == 1 && n == 8) {
    _mm256_storeu_ps(p, v);
    return;
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  for (int i = 0; i < n; ++i) p[i * stride] = lanes[i];
}

#if defined(__AVX512F__)
/// Stores lanes 0..n-1 of v (n <= 16), lane i at p[i * stride]. A masked store costs AMD Zen 5
/// far more than a plain one (it took a third of the prompt attention scores' time there), so
/// whole registers are stored plainly.
[[gnu::always_inline]] inline void store_first(float* p, __m512 v, int n, int64_t stride = 1) {
  if (stride != 1) {
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, v);
    for (int i = 0; i < n; ++i) p[i * stride] = lanes[i];
  } else if (n == 16) {
    _mm512_storeu_ps(p, v);
  } else {
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1), v);
  }
}

/// The same sum of the 16 lanes of a 512-bit register.
inline float hsum16(__m512 v) {
  // Zero-masked extracts: GCC 12 flags the unmasked ones as maybe-uninitialized.
  return hsum16(_mm512_maskz_extractf32x8_ps(0xff, v, 0), _mm512_maskz_extractf32x8_ps(0xff, v, 1));
}

/// hsum16 of four registers at once, each bit for bit as hsum16 gives it: the same pairs are
/// added, level by level, with two rows sharing a register (lanes i and i + 8, then i + 4,
/// i + 2, i + 1). Fewer than half the instructions of four separate sums, which matters where
/// rows are short (attention scores: 64 elements each).
inline void hsum16x4(__m512 a, __m512 b, __m512 c, __m512 d, float* out) {
  // Level 1: lanes 0-7 of ab hold a[i] + a[i + 8], lanes 8-15 the same for b.
  const __m512i lo8 = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
  const __m512i hi8 =
      _mm512_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
  const __m512 ab =
      _mm512_add_ps(_mm512_permutex2var_ps(a, lo8, b), _mm512_permutex2var_ps(a, hi8, b));
  const __m512 cd =
      _mm512_add_ps(_mm512_permutex2var_ps(c, lo8, d), _mm512_permutex2var_ps(c, hi8, d));
  // Level 2: lanes 4r..4r+3 hold row r's t8[i] + t8[i + 4].
  const __m512i lo4 = _mm512_setr_epi32(0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27);
  const __m512i hi4 = _mm512_setr_epi32(4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
  const __m512 t4 =
      _mm512_add_ps(_mm512_permutex2var_ps(ab, lo4, cd), _mm512_permutex2var_ps(ab, hi4, cd));
  // Levels 3 and 4 inside each group of four: (t4[0] + t4[2]) + (t4[1] + t4[3]) in lane 4r.
  const __m512 t2 = _mm512_add_ps(t4, _mm512_maskz_permute_ps(0xffff, t4, _MM_SHUFFLE(1, 0, 3, 2)));
  const __m512 t1 = _mm512_add_ps(t2, _mm512_maskz_permute_ps(0xffff, t2, _MM_SHUFFLE(2, 3, 0, 1)));
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, t1);
  out[0] = lanes[0];
  out[1] = lanes[4];
  out[2] = lanes[8];
  out[3] = lanes[12];
}
#endif

/// e^x per lane, within 1.5 ulp. Results below the smallest subnormal flush to 0, which is what
/// -inf gives; x > 88.72 gives +inf; NaN stays NaN.
///
/// The arithmetic is llama.cpp's AVX-512 expf (ARM's optimized-routines method), step for
/// step, so softmax and SiLU round exactly as llama.cpp's do: x = n ln2 + b with n rounded by
/// the 1.5 * 2^23 shifter and ln2 split in two; e^b by a degree-5 polynomial evaluated as
/// (c5 b + c4) u + (c3 b + c2), u = b^2, then times u plus (c1 b + 1); then times 2^n. The
/// scaling multiplies by two exact powers of two, which rounds once, as a scalef does.
inline __m256 exp(__m256 x) {
  const __m256 shifter = _mm256_set1_ps(0x1.8p23f);
  const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), shifter);
  const __m256 n = _mm256_sub_ps(z, shifter);
  const __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f),
                                    _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
  const __m256 u = _mm256_mul_ps(b, b);
  const __m256 hi = _mm256_fmadd_ps(
      _mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
      _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f)));
  const __m256 j = _mm256_fmadd_ps(
      hi, u, _mm256_fmadd_ps(_mm256_set1_ps(0x1.ffffecp-1f), b, _mm256_set1_ps(1.0f)));
  // 2^n as 2^(n/2) * 2^(n - n/2): the first product is exact (a normal float), the second
  // rounds once. n is clamped only to keep the integer conversion defined; lanes with
  // |n| > 192 are replaced below, as llama.cpp does.
  const __m256 nc =
      _mm256_min_ps(_mm256_max_ps(n, _mm256_set1_ps(-192.0f)), _mm256_set1_ps(192.0f));
  const __m256i ni = _mm256_cvtps_epi32(nc);
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  const __m256i n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  __m256 y = _mm256_mul_ps(_mm256_mul_ps(j, s1), s2);
  const __m256 abs_n = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), n);
  const __m256 far = _mm256_cmp_ps(abs_n, _mm256_set1_ps(192.0f), _CMP_GT_OQ);
  const __m256 big = _mm256_blendv_ps(_mm256_set1_ps(INFINITY), _mm256_setzero_ps(),
                                      _mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_LE_OQ));
  y = _mm256_blendv_ps(y, big, far);
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

#if defined(__AVX512F__)
/// Sixteen f16 values at p as f32 (exact).
[[gnu::always_inline]] inline __m512 load_halves16(const core::Half* p) {
  // Zero-masked form: GCC 12 flags the unmasked one as maybe-uninitialized.
  return _mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

/// exp(__m256) on 16 lanes: the same operations lane by lane, so the same bits.
inline __m512 exp(__m512 x) {
  // Zero-masked forms where GCC 12 flags the unmasked ones as maybe-uninitialized.
  const __m512 shifter = _mm512_set1_ps(0x1.8p23f);
  const __m512 z = _mm512_fmadd_ps(x, _mm512_set1_ps(0x1.715476p+0f), shifter);
  const __m512 n = _mm512_sub_ps(z, shifter);
  const __m512 b = _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.7f7d1cp-20f),
                                    _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e4p-1f), x));
  const __m512 u = _mm512_mul_ps(b, b);
  const __m512 hi = _mm512_fmadd_ps(
      _mm512_fmadd_ps(_mm512_set1_ps(0x1.0e4020p-7f), b, _mm512_set1_ps(0x1.573e2ep-5f)), u,
      _mm512_fmadd_ps(_mm512_set1_ps(0x1.555e66p-3f), b, _mm512_set1_ps(0x1.fffdb6p-2f)));
  const __m512 j = _mm512_fmadd_ps(
      hi, u, _mm512_fmadd_ps(_mm512_set1_ps(0x1.ffffecp-1f), b, _mm512_set1_ps(1.0f)));
  const __m512 nc = _mm512_maskz_min_ps(
      0xffff, _mm512_maskz_max_ps(0xffff, n, _mm512_set1_ps(-192.0f)), _mm512_set1_ps(192.0f));
  // In the current rounding mode (nearest even), as the 256-bit cvtps rounds.
  const __m512i ni = _mm512_maskz_cvtps_epi32(0xffff, nc);
  const __m512i n1 = _mm512_maskz_srai_epi32(0xffff, ni, 1);
  const __m512i n2 = _mm512_sub_epi32(ni, n1);
  const __m512i bias = _mm512_set1_epi32(127);
  const __m512 s1 =
      _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xffff, _mm512_add_epi32(n1, bias), 23));
  const __m512 s2 =
      _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xffff, _mm512_add_epi32(n2, bias), 23));
  __m512 y = _mm512_mul_ps(_mm512_mul_ps(j, s1), s2);
  const __m512 abs_n = _mm512_abs_ps(n);
  const __mmask16 far = _mm512_cmp_ps_mask(abs_n, _mm512_set1_ps(192.0f), _CMP_GT_OQ);
  const __mmask16 low = _mm512_cmp_ps_mask(n, _mm512_setzero_ps(), _CMP_LE_OQ);
  const __m512 big = _mm512_mask_blend_ps(low, _mm512_set1_ps(INFINITY), _mm512_setzero_ps());
  y = _mm512_mask_blend_ps(far, y, big);
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), y, x);
}
#endif

#endif  // STRATA_CPU_AVX2

}  // namespace strata::cpu::STRATA_KERNEL_NS::simd
