// Packed AVX-512 VNNI kernel for q4_0 weights with q8_0 activations (q8_0 weights have their
// own, in llama.cpp's summation order: dot_packed_q8_0.cpp).
//
// Rows are walked in groups of four 32-element blocks. In a group every int32 lane l holds the
// products of 8 elements of block l / 4: elements 4 (l % 4) .. + 3 from the "lo" vector and the
// same 16 further on from the "hi" vector. vpdpbusd wants unsigned weights, so they are taken
// as u = q + offset (the nibble itself, offset 8) and the
// packed activations carry -offset * (sum of each lane's 8 activations) as the initial lane
// value: each lane is the exact integer dot product of its 8 pairs (|lane| < 2^19).
//
// Per group and output: the lanes are converted to f32 (exact), multiplied by d_w * d_a (exact:
// two f16 values) with one fused multiply-add into 16 f32 lanes, and the 16 lanes are summed
// in a fixed order at the end. Nothing depends on the tile shape.
#include <cstring>

#include "core/blocks.h"
#include "core/float16.h"
#include "cpu/kernels/dot_packed.h"
#include "cpu/kernels/dot_tile.h"
#include "cpu/kernels/quantize_act.h"
#include "cpu/kernels/simd_int.h"

#if defined(STRATA_CPU_AVX512) && defined(__AVX512VBMI__)
#define STRATA_CPU_PACKED_Q8 1
#endif

namespace strata::cpu::STRATA_KERNEL_NS {
namespace {

using core::BlockQ4_0;
using core::BlockQ8_0;
using core::kQK8_0;

constexpr int64_t kGroup = 4 * kQK8_0;

#if defined(STRATA_CPU_PACKED_Q8)

/// One packed group of activations.
struct alignas(64) ActGroup {
  int8_t lo[64];     ///< elements 0..15 of blocks 0..3, block after block
  int8_t hi[64];     ///< elements 16..31 of blocks 0..3
  int32_t corr[16];  ///< -offset * (sum of lane l's 8 activations)
  float d[16];       ///< lane l: the scale of block l / 4
};
static_assert(sizeof(ActGroup) == 256);

size_t act_row_bytes(int64_t k) {
  return static_cast<size_t>(k / kGroup) * sizeof(ActGroup);
}

// Rounds each group with the q8_0 activation quantizer (blocks are independent), then reorders. A
// lane's correction is the sum of its 8 activations: vpdpbusd with unit weights, exact.
template <int Offset>
void pack(const float* src, uint8_t* dst, int64_t k) {
  auto* g = reinterpret_cast<ActGroup*>(dst);
  const __m512i ones = _mm512_set1_epi8(1);
  for (int64_t i = 0; i < k / kGroup; ++i, src += kGroup, ++g) {
    BlockQ8_0 b[4];
    quantize_q8_0(src, b, kGroup);
    for (int j = 0; j < 4; ++j) {
      std::memcpy(g->lo + 16 * j, b[j].qs, 16);
      std::memcpy(g->hi + 16 * j, b[j].qs + 16, 16);
      const float d = core::half_to_float(b[j].d);
      for (int l = 0; l < 4; ++l) g->d[4 * j + l] = d;
    }
    const __m512i lo = _mm512_load_si512(g->lo);
    const __m512i hi = _mm512_load_si512(g->hi);
    const __m512i sum =
        _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, lo), ones, hi);
    _mm512_store_si512(g->corr, _mm512_mullo_epi32(sum, _mm512_set1_epi32(-Offset)));
  }
}

struct Index64 {
  alignas(64) uint8_t v[64];
};

// q4_0: a group is 72 bytes; vpermt2b gathers the four blocks' 16 quant bytes from the bytes
// at 0..63 and at 8..71 (both inside the group, so no load crosses the row's end).
constexpr Index64 q4_qs_index() {
  Index64 x{};
  for (int j = 0; j < 4; ++j) {
    for (int e = 0; e < 16; ++e) {
      const int byte = 18 * j + 2 + e;
      x.v[16 * j + e] = static_cast<uint8_t>(byte < 64 ? byte : 64 + byte - 8);
    }
  }
  return x;
}
constexpr Index64 kQ4Qs = q4_qs_index();

// Word i (of the low 16) picks the f16 scale of block i / 4, from words 0, 9, 18, 27.
constexpr Index64 scale_index(int w0, int w1, int w2, int w3) {
  Index64 x{};
  const int words[4] = {w0, w1, w2, w3};
  for (int i = 0; i < 16; ++i) {
    x.v[2 * i] = static_cast<uint8_t>(words[i / 4]);
    x.v[2 * i + 1] = 0;
  }
  return x;
}
constexpr Index64 kQ4Scales = scale_index(0, 9, 18, 27);

inline __m512i load_index(const Index64& x) {
  return _mm512_load_si512(x.v);
}

// Weight group decoders: the unsigned levels in the lo / hi lane order, and the scales.
struct Q4Group {
  static constexpr size_t kBytes = 4 * sizeof(BlockQ4_0);
  [[gnu::always_inline]] static void load(const uint8_t* p, __m512i& lo, __m512i& hi, __m512& d) {
    const __m512i a = _mm512_loadu_si512(p);
    const __m512i b = _mm512_loadu_si512(p + 8);
    const __m512i qs = _mm512_permutex2var_epi8(a, load_index(kQ4Qs), b);
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    lo = _mm512_and_si512(qs, low4);
    hi = _mm512_and_si512(_mm512_srli_epi16(qs, 4), low4);
    const __m512i words = _mm512_permutexvar_epi16(load_index(kQ4Scales), a);
    d = _mm512_maskz_cvtph_ps(0xffff, _mm512_maskz_extracti64x4_epi64(0xff, words, 0));
  }
};

// Bytes ahead of the group being read, per row (tuned on a Zen 4 core).
constexpr size_t kPrefetch = 1536;

template <class G>
struct GroupDot {
  template <int NW, int NA>
  static void run(int64_t k, const uint8_t* w, size_t ldw, const uint8_t* a, size_t lda, float* out,
                  int64_t ldo_w, int64_t ldo_a) {
    const int64_t groups = k / kGroup;
    __m512 acc[NW][NA];
    for (int r = 0; r < NW; ++r) {
      for (int c = 0; c < NA; ++c) acc[r][c] = _mm512_setzero_ps();
    }
    for (int64_t g = 0; g < groups; ++g) {
      __m512i lo[NW], hi[NW];
      __m512 d[NW];
      for (int r = 0; r < NW; ++r) {
        const uint8_t* p = w + r * ldw + static_cast<size_t>(g) * G::kBytes;
        // One row is one stream; the hardware prefetcher alone does not keep enough lines in
        // flight (nor cross 4 KiB pages) to read several of them at memory speed.
        _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetch), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetch + 64), _MM_HINT_T0);
        G::load(p, lo[r], hi[r], d[r]);
      }
      for (int c = 0; c < NA; ++c) {
        const ActGroup* y = reinterpret_cast<const ActGroup*>(a + c * lda) + g;
        for (int r = 0; r < NW; ++r) {
          __m512i i =
              _mm512_dpbusd_epi32(_mm512_load_si512(y->corr), lo[r], _mm512_load_si512(y->lo));
          i = _mm512_dpbusd_epi32(i, hi[r], _mm512_load_si512(y->hi));
          const __m512 s = _mm512_mul_ps(d[r], _mm512_load_ps(y->d));
          acc[r][c] = _mm512_fmadd_ps(s, _mm512_maskz_cvtepi32_ps(0xffff, i), acc[r][c]);
        }
      }
    }
    for (int r = 0; r < NW; ++r) {
      for (int c = 0; c < NA; ++c) out[r * ldo_w + c * ldo_a] = simd::hsum16(acc[r][c]);
    }
  }
};

// 6 weight rows x 3 activation rows: 18 accumulators; decode (one activation row) walks six
// weight rows at once. Measured against 3 x 6 in one session: prefill +3%, decode +4%
// (4 x 4, 8 x 2 and 8 x 3 were no better).
constexpr int kMaxW = 6;
constexpr int kMaxA = 3;

const PackedDot kPackedQ4_0 = {
    kMaxW, kMaxA, kGroup, act_row_bytes, pack<8>, tile_dispatch<GroupDot<Q4Group>, kMaxW, kMaxA>};

#endif  // STRATA_CPU_PACKED_Q8

}  // namespace

const PackedDot* packed_dot_q8(core::Type weight_type, int64_t k) {
#if defined(STRATA_CPU_PACKED_Q8)
  if (k % kGroup != 0) return nullptr;
  if (weight_type == core::Type::kQ4_0) return &kPackedQ4_0;
#else
  (void)weight_type;
  (void)k;
#endif
  return nullptr;
}

}  // namespace strata::cpu::STRATA_KERNEL_NS
