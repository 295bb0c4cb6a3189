// Q4_0 and Q4_1: 32 weights in 16 bytes of nibbles plus one (Q4_0) or two (Q4_1) fp16 scales.
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "core/blocks.h"
#include "core/quants/quants.h"
#include "core/quants/rounding.h"

#include "core/quants/strict_float.h"

namespace strata::core {
namespace {

constexpr int kHalf = kQK4_0 / 2;

/// Packs element j in the low nibble and j + 16 in the high nibble of byte j.
void pack_nibbles(const int* q, uint8_t* qs) {
  for (int j = 0; j < kHalf; ++j) qs[j] = static_cast<uint8_t>(q[j] | (q[j + kHalf] << 4));
}

}  // namespace

void q4_0_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_0*>(src);
  for (int64_t i = 0; i < n / kQK4_0; ++i, dst += kQK4_0) {
    const float d = half_to_float(b[i].d);
    for (int j = 0; j < kHalf; ++j) {
      dst[j] = static_cast<float>((b[i].qs[j] & 0x0f) - 8) * d;
      dst[j + kHalf] = static_cast<float>((b[i].qs[j] >> 4) - 8) * d;
    }
  }
}

// The scale maps the element of largest magnitude (sign included) to -8, so that value is
// represented exactly and the asymmetric range [-8, 7] is used in full; +8 steps clamps to 7.
void q4_0_from_float(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_0*>(dst);
  for (int64_t i = 0; i < n / kQK4_0; ++i, src += kQK4_0) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK4_0; ++j) {
      if (std::fabs(src[j]) > amax) {
        amax = std::fabs(src[j]);
        max = src[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = float_to_half(d);
    int q[kQK4_0];
    for (int j = 0; j < kQK4_0; ++j) q[j] = truncate_int(src[j] * id + 8.5f, 0, 15);
    pack_nibbles(q, b[i].qs);
  }
}

void q4_1_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_1*>(src);
  for (int64_t i = 0; i < n / kQK4_1; ++i, dst += kQK4_1) {
    const float d = half_to_float(b[i].d);
    const float m = half_to_float(b[i].m);
    for (int j = 0; j < kHalf; ++j) {
      dst[j] = static_cast<float>(b[i].qs[j] & 0x0f) * d + m;
      dst[j + kHalf] = static_cast<float>(b[i].qs[j] >> 4) * d + m;
    }
  }
}

// 16 levels spread evenly from the block's minimum to its maximum.
void q4_1_from_float(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_1*>(dst);
  for (int64_t i = 0; i < n / kQK4_1; ++i, src += kQK4_1) {
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < kQK4_1; ++j) {
      min = std::min(min, src[j]);
      max = std::max(max, src[j]);
    }
    const float d = (max - min) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = float_to_half(d);
    b[i].m = float_to_half(min);
    int q[kQK4_1];
    for (int j = 0; j < kQK4_1; ++j) q[j] = truncate_int((src[j] - min) * id + 0.5f, 0, 15);
    pack_nibbles(q, b[i].qs);
  }
}

}  // namespace strata::core
