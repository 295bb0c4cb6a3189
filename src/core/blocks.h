// GGUF's quantization block layouts, byte for byte: the 32-element blocks here, the 256-element
// K-quant super-blocks in quants/blocks_k.h (included below, so one include gives every layout).
#pragma once

#include <cstdint>

#include "core/float16.h"

namespace strata::core {

inline constexpr int kQK4_0 = 32;
inline constexpr int kQK4_1 = 32;
inline constexpr int kQK5_0 = 32;
inline constexpr int kQK5_1 = 32;
inline constexpr int kQK8_0 = 32;
inline constexpr int kQK8_1 = 32;

/// 32 weights as 4-bit unsigned values q with weight = d * (q - 8). Byte j holds element j in
/// its low nibble and element j + 16 in its high nibble.
struct BlockQ4_0 {
  Half d;
  uint8_t qs[kQK4_0 / 2];
};
static_assert(sizeof(BlockQ4_0) == 18);

/// 32 weights as 4-bit unsigned values q with weight = d * q + m. Nibbles as in Q4_0.
struct BlockQ4_1 {
  Half d;
  Half m;
  uint8_t qs[kQK4_1 / 2];
};
static_assert(sizeof(BlockQ4_1) == 20);

/// 32 weights as 5-bit unsigned values q with weight = d * (q - 16). The low four bits are
/// nibbles as in Q4_0; bit j of the little-endian 32-bit `qh` is the fifth bit of element j.
struct BlockQ5_0 {
  Half d;
  uint8_t qh[4];
  uint8_t qs[kQK5_0 / 2];
};
static_assert(sizeof(BlockQ5_0) == 22);

/// 32 weights as 5-bit unsigned values q with weight = d * q + m. Bits as in Q5_0.
struct BlockQ5_1 {
  Half d;
  Half m;
  uint8_t qh[4];
  uint8_t qs[kQK5_1 / 2];
};
static_assert(sizeof(BlockQ5_1) == 24);

/// 32 weights as signed bytes with weight = d * q.
struct BlockQ8_0 {
  Half d;
  int8_t qs[kQK8_0];
};
static_assert(sizeof(BlockQ8_0) == 34);

/// Activations for dot products with Q4_1 / Q5_1: 32 signed bytes with value = d * q, and
/// s = d * (sum of q), which folds the weights' offset m into one multiply per block.
struct BlockQ8_1 {
  Half d;
  Half s;
  int8_t qs[kQK8_1];
};
static_assert(sizeof(BlockQ8_1) == 36);

}  // namespace strata::core

#include "core/quants/blocks_k.h"
