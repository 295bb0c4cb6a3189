// Q6_K: signed 6-bit levels (four bits in ql, two in qh), sub-blocks of 16 with signed 8-bit
// scales.
#include <algorithm>
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

/// Where element e's bits live: each 128 elements use 64 bytes of ql and 32 of qh; within them
/// element 32 * k + l has its nibble in ql[l + 32 * (k % 2)] (high nibble for k >= 2) and its
/// top two bits at bits 2k of qh[l].
struct Position {
  int ql;
  int ql_shift;
  int qh;
  int qh_shift;
};
inline Position position_of(int e) {
  const int chunk = e / 128, k = (e % 128) / 32, l = e % 32;
  return {64 * chunk + l + 32 * (k % 2), 4 * (k / 2), 32 * chunk + l, 2 * k};
}

}  // namespace

void q6_k_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ6_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = half_to_float(b[i].d);
    for (int chunk = 0; chunk < 2; ++chunk, dst += 128) {
      const uint8_t* ql = b[i].ql + 64 * chunk;
      const uint8_t* qh = b[i].qh + 32 * chunk;
      const int8_t* sc = b[i].scales + 8 * chunk;
      // One byte of qh holds the top bits of elements l, l + 32, l + 64 and l + 96.
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        dst[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
        dst[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        dst[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        dst[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

// Each sub-block's scale comes from a search around its largest magnitude; the scales are then
// quantized to 8 bits against the one of largest magnitude, which maps to -128.
void q6_k_from_float(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ6_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i, src += kQK_K) {
    int8_t L[kQK_K];
    float scales[kNumSub];
    float max_abs_scale = 0.0f, max_scale = 0.0f;
    for (int j = 0; j < kNumSub; ++j) {
      scales[j] = fit_symmetric_search(kSub, 32, src + kSub * j, L + kSub * j);
      if (std::fabs(scales[j]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    std::memset(&b[i], 0, sizeof b[i]);
    if (max_abs_scale < kGroupMaxEps) continue;  // all zeros: d = 0, every level 0

    const float iscale = -128.0f / max_scale;
    b[i].d = float_to_half(1.0f / iscale);
    for (int j = 0; j < kNumSub; ++j) {
      b[i].scales[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[j])));
    }

    // Round again against the stored scales; a sub-block with scale 0 keeps its fitted levels.
    const float d = half_to_float(b[i].d);
    for (int j = 0; j < kNumSub; ++j) {
      const float dl = d * static_cast<float>(b[i].scales[j]);
      if (dl == 0.0f) continue;
      for (int l = 0; l < kSub; ++l) {
        L[kSub * j + l] = static_cast<int8_t>(nearest_int(src[kSub * j + l] / dl, -32, 31) + 32);
      }
    }

    for (int e = 0; e < kQK_K; ++e) {
      const Position p = position_of(e);
      b[i].ql[p.ql] |= static_cast<uint8_t>((L[e] & 0x0f) << p.ql_shift);
      b[i].qh[p.qh] |= static_cast<uint8_t>((L[e] >> 4) << p.qh_shift);
    }
  }
}

}  // namespace strata::core
