// Lane-by-lane evaluation of dot products against a transposed float matrix.
//
// Gathering a transposed view into dense rows copies it element by element once per tile of
// rows. This walks down the columns instead, 16 outputs at a time, keeping for every output d
// the 16 accumulators the dense kernel would have: lane j % 16 of output d receives
// fma(w[j][d], a[j], lane) for j in increasing order, and the lanes are summed as the same
// tree. Each output therefore rounds exactly as in dot_float.cpp; only the loop order differs.
#include "cpu/kernels/dot_transposed.h"

#include <algorithm>
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

// Up to four blocks of 16 outputs (64 of them: a 128-byte f16 row of the cache) for up to four
// activation rows, over the cells of one chunk. Lane l of every output takes cells l, l + 16,
// l + 32, ... in that order, so one pass per lane walks down the chunk 16 cells at a stride
// with every accumulator in a register, and per cell one load (and convert) per block feeds
// every activation row. (Walking each output's 16 lanes as registers instead reads the rows
// once per activation row and per block, half a line at a time.) lanes[(r * 16 + l) * m + d]
// holds lane l of output d for activation r between chunks; the caller sums the lanes.
//
// A pass strides 16 cells (a page or more of the cache apart), which hardware prefetchers do
// not follow, and sixteen passes over the whole cache would each ask memory for a sixteenth of
// its lines. Chunks keep the passes within a few dozen KiB that stay cached, and while the
// first activation rows walk a chunk, they ask for the same cells of the next one.
constexpr int kBlocks = 4;
constexpr int kWalkRows = 4;
constexpr int64_t kChunkCells = 256;

template <int NB, int NR>
void walk_lanes(core::Type type, int64_t j0, int64_t j1, int64_t m, int64_t d0, const uint8_t* w,
                size_t col_stride, const float* acts, int64_t k, bool resume, bool prefetch,
                float* lanes) {
  const size_t es = core::type_size(type);
  const uint8_t* base = w + static_cast<size_t>(d0) * es;
  const size_t ahead = static_cast<size_t>(kChunkCells) * col_stride;
  for (int l = 0; l < kLanes; ++l) {
    __m512 acc[NB][NR];
    for (int b = 0; b < NB; ++b) {
      for (int r = 0; r < NR; ++r) {
        acc[b][r] = resume ? _mm512_loadu_ps(lanes + (r * kLanes + l) * m + d0 + kLanes * b)
                           : _mm512_setzero_ps();
      }
    }
    for (int64_t j = j0 + l; j < j1; j += kLanes) {
      const uint8_t* row = base + static_cast<size_t>(j) * col_stride;
      if (prefetch) {
        for (size_t b = 0; b < NB * kLanes * es; b += 64) simd::prefetch_stream(row + ahead + b);
      }
      __m512 v[NB];
      for (int b = 0; b < NB; ++b) v[b] = load16(type, row + static_cast<size_t>(kLanes * b) * es);
      for (int r = 0; r < NR; ++r) {
        const __m512 a = _mm512_set1_ps(acts[r * k + j]);
        for (int b = 0; b < NB; ++b) acc[b][r] = _mm512_fmadd_ps(v[b], a, acc[b][r]);
      }
    }
    for (int r = 0; r < NR; ++r) {
      for (int b = 0; b < NB; ++b) {
        _mm512_storeu_ps(lanes + (r * kLanes + l) * m + d0 + kLanes * b, acc[b][r]);
      }
    }
  }
}

/// walk_lanes<nb, nr> for the run-time nb <= NB and nr <= NR.
template <int NB, int NR>
void walk_lanes_dispatch(core::Type type, int64_t j0, int64_t j1, int64_t m, int64_t d0,
                         const uint8_t* w, size_t col_stride, const float* acts, int64_t k,
                         bool resume, bool prefetch, int nb, int nr, float* lanes) {
  if constexpr (NB > 1) {
    if (nb < NB) {
      return walk_lanes_dispatch<NB - 1, NR>(type, j0, j1, m, d0, w, col_stride, acts, k, resume,
                                             prefetch, nb, nr, lanes);
    }
  }
  if constexpr (NR > 1) {
    if (nr < NR) {
      return walk_lanes_dispatch<NB, NR - 1>(type, j0, j1, m, d0, w, col_stride, acts, k, resume,
                                             prefetch, nb, nr, lanes);
    }
  }
  walk_lanes<NB, NR>(type, j0, j1, m, d0, w, col_stride, acts, k, resume, prefetch, lanes);
}
#elif defined(STRATA_CPU_AVX2)
inline __m256 load8(core::Type type, const uint8_t* p) {
  if (type == core::Type::kF32) return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Sixteen lanes of every output do not fit AVX2's registers, so they live in `lanes` (for
// activation r, lane l of output d at (r * 16 + l) * m + d: a few KiB that stay in L1) and the
// walk goes down the columns in address order, each column read once for every activation row,
// eight outputs at a time. The lane tree then runs eight outputs at once.
template <core::Type kType>
int64_t dot_transposed_by8(int64_t k, int64_t m, const uint8_t* w, size_t col_stride,
                           const float* acts, int n_act, float* lanes, float* out, int64_t ldo,
                           int64_t ldo_row) {
  const size_t es = core::type_size(kType);
  const int64_t vec_m = m / 8 * 8;
  if (vec_m == 0) return 0;
  const int64_t per_row = kLanes * m;
  std::memset(lanes, 0, static_cast<size_t>(n_act * per_row) * sizeof(float));
  for (int64_t j = 0; j < k; ++j) {
    const uint8_t* column = w + static_cast<size_t>(j) * col_stride;
    float* lane = lanes + (j % kLanes) * m;
    __m256 a[kTransposedMaxRows];
    for (int r = 0; r < n_act; ++r) a[r] = _mm256_set1_ps(acts[r * k + j]);
    for (int64_t d = 0; d < vec_m; d += 8) {
      const __m256 v = load8(kType, column + static_cast<size_t>(d) * es);
      for (int r = 0; r < n_act; ++r) {
        float* cell = lane + r * per_row + d;
        _mm256_storeu_ps(cell, _mm256_fmadd_ps(v, a[r], _mm256_loadu_ps(cell)));
      }
    }
  }
  for (int r = 0; r < n_act; ++r) {
    const float* own = lanes + r * per_row;
    for (int64_t d = 0; d < vec_m; d += 8) {
      __m256 t8[8], t4[4];
      for (int i = 0; i < 8; ++i) {
        t8[i] =
            _mm256_add_ps(_mm256_loadu_ps(own + i * m + d), _mm256_loadu_ps(own + (i + 8) * m + d));
      }
      for (int i = 0; i < 4; ++i) t4[i] = _mm256_add_ps(t8[i], t8[i + 4]);
      const __m256 sum = _mm256_add_ps(_mm256_add_ps(t4[0], t4[2]), _mm256_add_ps(t4[1], t4[3]));
      alignas(32) float s[8];
      _mm256_store_ps(s, sum);
      for (int i = 0; i < 8; ++i) out[r * ldo_row + (d + i) * ldo] = s[i];
    }
  }
  return vec_m;
}
#endif

}  // namespace

bool dot_transposed_supported(core::Type type, int64_t k) {
  return (type == core::Type::kF32 || type == core::Type::kF16) && k % kLanes == 0;
}

size_t dot_transposed_scratch(int64_t k, int64_t m) {
  return static_cast<size_t>(kTransposedMaxRows * (k + kLanes * m) + m);
}

void dot_transposed_rows(core::Type type, int64_t k, int64_t m, const uint8_t* w, size_t col_stride,
                         const uint8_t* a, size_t lda, int n_act, float* out, int64_t ldo,
                         int64_t ldo_row, float* scratch) {
  const size_t es = core::type_size(type);
  float* acts = scratch;  // the activations as f32 (exact), row r at r * k
  float* lanes = scratch + kTransposedMaxRows * k;
  float* column = lanes + kTransposedMaxRows * kLanes * m;
  for (int r = 0; r < n_act; ++r) row_to_f32(type, a + r * lda, acts + r * k, k);
  int64_t vec_m = 0;
#if defined(STRATA_CPU_AVX2) && defined(__AVX512F__)
  vec_m = m / kLanes * kLanes;
  for (int64_t d = 0; d < vec_m; d += kBlocks * kLanes) {
    const int blocks = static_cast<int>(std::min<int64_t>(kBlocks, (vec_m - d) / kLanes));
    for (int64_t j0 = 0; j0 < k; j0 += kChunkCells) {
      const int64_t j1 = std::min(k, j0 + kChunkCells);
      for (int r0 = 0; r0 < n_act; r0 += kWalkRows) {
        walk_lanes_dispatch<kBlocks, kWalkRows>(
            type, j0, j1, m, d, w, col_stride, acts + r0 * k, k, j0 > 0, r0 == 0, blocks,
            std::min(kWalkRows, n_act - r0), lanes + r0 * kLanes * m);
      }
    }
  }
  for (int r = 0; r < n_act; ++r) {
    const float* own = lanes + r * kLanes * m;
    for (int64_t d = 0; d < vec_m; d += kLanes) {
      __m512 t8[8], t4[4];
      for (int i = 0; i < 8; ++i) {
        t8[i] =
            _mm512_add_ps(_mm512_loadu_ps(own + i * m + d), _mm512_loadu_ps(own + (i + 8) * m + d));
      }
      for (int i = 0; i < 4; ++i) t4[i] = _mm512_add_ps(t8[i], t8[i + 4]);
      const __m512 sum = _mm512_add_ps(_mm512_add_ps(t4[0], t4[2]), _mm512_add_ps(t4[1], t4[3]));
      alignas(64) float s[kLanes];
      _mm512_store_ps(s, sum);
      for (int i = 0; i < kLanes; ++i) out[r * ldo_row + (d + i) * ldo] = s[i];
    }
  }
#elif defined(STRATA_CPU_AVX2)
  vec_m = type == core::Type::kF32
              ? dot_transposed_by8<core::Type::kF32>(k, m, w, col_stride, acts, n_act, lanes, out,
                                                     ldo, ldo_row)
              : dot_transposed_by8<core::Type::kF16>(k, m, w, col_stride, acts, n_act, lanes, out,
                                                     ldo, ldo_row);
#endif
  if (vec_m == m) return;
  // The remaining outputs: the same lanes, kept in memory (lanes[l * m + d]).
  const int64_t rest = m - vec_m;
  for (int r = 0; r < n_act; ++r) {
    const float* act = acts + r * k;
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
      out[r * ldo_row + (vec_m + d) * ldo] = simd::lane_tree16(lane);
    }
  }
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
