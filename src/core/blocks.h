// GGUF's quantization block layouts, byte for byte.
#pragma once

#include <cstdint>

#include "core/float16.h"

namespace strata::core {

inline constexpr int kQK4_0 = 32;
inline constexpr int kQK8_0 = 32;

/// 32 weights as 4-bit unsigned values q with weight = d * (q - 8). Byte j holds element j in
/// its low nibble and element j + 16 in its high nibble.
struct BlockQ4_0 {
  Half d;
  uint8_t qs[kQK4_0 / 2];
};
static_assert(sizeof(BlockQ4_0) == 18);

/// 32 weights as signed bytes with weight = d * q.
struct BlockQ8_0 {
  Half d;
  int8_t qs[kQK8_0];
};
static_assert(sizeof(BlockQ8_0) == 34);

}  // namespace strata::core
