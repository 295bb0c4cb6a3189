// Q3_K: signed 3-bit levels (two bits in qs, the third in hmask), sub-blocks of 16 with signed
// 6-bit scales.
#include <cmath>
#include <cstring>

#include "core/blocks.h"
#include "core/quants/k_fit.h"
#include "core/quants/quants.h"
#include "core/quants/rounding.h"

#include "core/quants/strict_float.h"

namespace strata::core {
namespace {

constexpr int kSub = 16;
constexpr int kNumSub = kQK_K / kSub;

/// Byte and shift of element e's low 2 bits, as in Q2_K.
inline int byte_of(int e) {
  return 32 * (e / 128) + e % 32;
}
inline int shift_of(int e) {
  return 2 * ((e % 128) / 32);
}

/// Sub-block `sub`'s scale in [-32, 31].
int unpack_scale(const uint8_t* scales, int sub) {
  const int low = sub < 8 ? scales[sub] & 0x0f : scales[sub - 8] >> 4;
  const int high = (scales[8 + sub % 4] >> (2 * (sub / 4))) & 3;
  return (low | (high << 4)) - 32;
}

/// Stores `biased` (the scale + 32, 6 bits) into the zeroed packed scales.
void pack_scale(uint8_t* scales, int sub, int biased) {
  if (sub < 8) {
    scales[sub] = static_cast<uint8_t>(biased & 0x0f);
  } else {
    scales[sub - 8] |= static_cast<uint8_t>((biased & 0x0f) << 4);
  }
  scales[8 + sub % 4] |= static_cast<uint8_t>((biased >> 4) << (2 * (sub / 4)));
}

}  // namespace

void q3_k_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ3_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = half_to_float(b[i].d);
    const uint8_t* hm = b[i].hmask;
    float dl[kNumSub];
    for (int sub = 0; sub < kNumSub; ++sub) {
      dl[sub] = d * static_cast<float>(unpack_scale(b[i].scales, sub));
    }
    int sub = 0, hbit = 0;
    // Walk the elements in order: per 128, four bit pairs (and hmask bits), each two
    // sub-blocks of 16 bytes.
    for (const uint8_t* q = b[i].qs; q < b[i].qs + kQK_K / 4; q += 32) {
      for (int shift = 0; shift < 8; shift += 2, ++hbit) {
        for (int half = 0; half < 32; half += kSub, ++sub) {
          for (int l = half; l < half + kSub; ++l) {
            const int low = (q[l] >> shift) & 3;
            *dst++ = dl[sub] * static_cast<float>(low - (((hm[l] >> hbit) & 1) ? 0 : 4));
          }
        }
      }
    }
  }
}

// Each sub-block's scale comes from a coordinate-descent fit; the scales are then quantized to
// 6 bits against the one of largest magnitude, which maps to -32.
void q3_k_from_float(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ3_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i, src += kQK_K) {
    int8_t L[kQK_K];
    float scales[kNumSub];
    float amax = 0.0f, max_scale = 0.0f;
    for (int j = 0; j < kNumSub; ++j) {
      scales[j] = fit_symmetric_refined(kSub, 4, src + kSub * j, L + kSub * j, true);
      if (std::fabs(scales[j]) > amax) {
        amax = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }

    std::memset(b[i].scales, 0, sizeof b[i].scales);
    b[i].d = float_to_half(0.0f);
    if (max_scale != 0.0f) {
      const float iscale = -32.0f / max_scale;
      for (int j = 0; j < kNumSub; ++j) {
        pack_scale(b[i].scales, j, nearest_int(iscale * scales[j], -32, 31) + 32);
      }
      b[i].d = float_to_half(1.0f / iscale);
    }

    // Round again against the stored scales; a sub-block with scale 0 keeps its fitted levels.
    const float d = half_to_float(b[i].d);
    for (int j = 0; j < kNumSub; ++j) {
      const float dl = d * static_cast<float>(unpack_scale(b[i].scales, j));
      if (dl == 0.0f) continue;
      for (int l = 0; l < kSub; ++l) {
        L[kSub * j + l] = static_cast<int8_t>(nearest_int(src[kSub * j + l] / dl, -4, 3) + 4);
      }
    }

    std::memset(b[i].hmask, 0, sizeof b[i].hmask);
    std::memset(b[i].qs, 0, sizeof b[i].qs);
    for (int e = 0; e < kQK_K; ++e) {
      if (L[e] > 3) b[i].hmask[e % 32] |= static_cast<uint8_t>(1u << (e / 32));
      b[i].qs[byte_of(e)] |= static_cast<uint8_t>((L[e] & 3) << shift_of(e));
    }
  }
}

}  // namespace strata::core
