// GGUF's K-quant super-block layouts, byte for byte: 256 elements in sub-blocks of 16 or 32,
// each sub-block with its own scale (and min) quantized against the super-block's fp16 scales.
#pragma once

#include <cstdint>

#include "core/float16.h"

namespace strata::core {

/// Elements per K-quant super-block.
inline constexpr int kQK_K = 256;
/// Bytes of the packed 6-bit scales and mins of Q4_K and Q5_K (and the 6-bit scales of Q3_K).
inline constexpr int kKScaleBytes = 12;

/// 2 bits per weight. 16 sub-blocks of 16: weight = d * sc * q - dmin * m with sc the low and
/// m the high nibble of `scales[sub]`. Each 128 elements use 32 bytes of `qs`: element
/// 32 * k + l (k = 0..3) sits in bits 2k..2k+1 of byte l.
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  Half d;
  Half dmin;
};
static_assert(sizeof(BlockQ2_K) == 84);

/// 3 bits per weight, signed. 16 sub-blocks of 16: weight = d * (sc - 32) * (q - 4), where the
/// low two bits of q pack like Q2_K and the third is bit e / 32 of `hmask[e % 32]`. Each 6-bit
/// sc has its low nibble in `scales[sub % 8]` (low half for sub < 8, high half otherwise) and
/// its top two bits at bits 2 * (sub / 4) of `scales[8 + sub % 4]`.
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[kKScaleBytes];
  Half d;
};
static_assert(sizeof(BlockQ3_K) == 110);

/// 4 bits per weight. 8 sub-blocks of 32: weight = d * sc * q - dmin * m with 6-bit sc and m
/// packed in `scales` (see k_scales.h). Each 64 elements use 32 bytes of `qs`: the first 32 in
/// the low nibbles, the next 32 in the high nibbles.
struct BlockQ4_K {
  Half d;
  Half dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ4_K) == 144);

/// 5 bits per weight: Q4_K plus a fifth bit per element, bit 2 * (e / 64) + (e % 64) / 32 of
/// `qh[e % 32]`.
struct BlockQ5_K {
  Half d;
  Half dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ5_K) == 176);

/// 6 bits per weight, signed. 16 sub-blocks of 16: weight = d * scales[sub] * (q - 32). Each 128
/// elements use 64 bytes of `ql` and 32 of `qh`: for l < 32, element 32 * k + l has its low
/// nibble in ql[l + 32 * (k % 2)] (low half for k < 2, high half otherwise) and its top two
/// bits at bits 2k..2k+1 of qh[l].
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  Half d;
};
static_assert(sizeof(BlockQ6_K) == 210);

/// Activations for dot products with K-quant weights: value = d * q, and the sums of q over
/// each group of 16, which fold the weights' mins into one multiply per sub-block.
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};
static_assert(sizeof(BlockQ8_K) == 292);

}  // namespace strata::core
