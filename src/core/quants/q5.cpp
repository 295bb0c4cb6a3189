// Q5_0 and Q5_1: Q4_0 / Q4_1 with a fifth bit per weight kept in a 32-bit mask.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "core/blocks.h"
#include "core/quants/quants.h"
#include "core/quants/rounding.h"

#include "core/quants/strict_float.h"

namespace strata::core {
namespace {

constexpr int kHalf = kQK5_0 / 2;

/// Element j's 5-bit value: its nibble, plus bit j of the little-endian mask as bit 4.
void unpack(const uint8_t qh_bytes[4], const uint8_t* qs, int* q) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, sizeof qh);
  for (int j = 0; j < kHalf; ++j) {
    q[j] = static_cast<int>((qs[j] & 0x0f) | (((qh >> j) & 1u) << 4));
    q[j + kHalf] = static_cast<int>((qs[j] >> 4) | (((qh >> (j + kHalf)) & 1u) << 4));
  }
}

void pack(const int* q, uint8_t qh_bytes[4], uint8_t* qs) {
  uint32_t qh = 0;
  for (int j = 0; j < kHalf; ++j) {
    qs[j] = static_cast<uint8_t>((q[j] & 0x0f) | ((q[j + kHalf] & 0x0f) << 4));
    qh |= static_cast<uint32_t>(q[j] >> 4) << j;
    qh |= static_cast<uint32_t>(q[j + kHalf] >> 4) << (j + kHalf);
  }
  std::memcpy(qh_bytes, &qh, sizeof qh);
}

}  // namespace

void q5_0_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_0*>(src);
  for (int64_t i = 0; i < n / kQK5_0; ++i, dst += kQK5_0) {
    const float d = half_to_float(b[i].d);
    int q[kQK5_0];
    unpack(b[i].qh, b[i].qs, q);
    for (int j = 0; j < kQK5_0; ++j) dst[j] = static_cast<float>(q[j] - 16) * d;
  }
}

// As Q4_0: the element of largest magnitude maps to -16 exactly; +16 steps clamps to 15.
void q5_0_from_float(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_0*>(dst);
  for (int64_t i = 0; i < n / kQK5_0; ++i, src += kQK5_0) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK5_0; ++j) {
      if (std::fabs(src[j]) > amax) {
        amax = std::fabs(src[j]);
        max = src[j];
      }
    }
    const float d = max / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = float_to_half(d);
    int q[kQK5_0];
    for (int j = 0; j < kQK5_0; ++j) q[j] = truncate_int(src[j] * id + 16.5f, 0, 31);
    pack(q, b[i].qh, b[i].qs);
  }
}

void q5_1_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_1*>(src);
  for (int64_t i = 0; i < n / kQK5_1; ++i, dst += kQK5_1) {
    const float d = half_to_float(b[i].d);
    const float m = half_to_float(b[i].m);
    int q[kQK5_1];
    unpack(b[i].qh, b[i].qs, q);
    for (int j = 0; j < kQK5_1; ++j) dst[j] = static_cast<float>(q[j]) * d + m;
  }
}

// 32 levels spread evenly from the block's minimum to its maximum.
void q5_1_from_float(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_1*>(dst);
  for (int64_t i = 0; i < n / kQK5_1; ++i, src += kQK5_1) {
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < kQK5_1; ++j) {
      min = std::min(min, src[j]);
      max = std::max(max, src[j]);
    }
    const float d = (max - min) / 31.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = float_to_half(d);
    b[i].m = float_to_half(min);
    int q[kQK5_1];
    for (int j = 0; j < kQK5_1; ++j) q[j] = truncate_int((src[j] - min) * id + 0.5f, 0, 31);
    pack(q, b[i].qh, b[i].qs);
  }
}

}  // namespace strata::core
