// The part Q4_K and Q5_K share: 8 sub-blocks of 32, each with a 6-bit scale and a 6-bit min
// against the super-block's fp16 d and dmin, packed in 12 bytes.
#pragma once

#include <cstdint>

#include "core/float16.h"
#include "core/quants/blocks_k.h"
#include "core/quants/k_fit.h"

namespace strata::core {

/// A sub-block's 6-bit scale and min: its weights are d * scale * q - dmin * min.
struct ScaleMin {
  uint8_t scale;
  uint8_t min;
};

/// Sub-block `sub` (0..7) of the packed bytes. Sub-blocks 0-3 keep their scale and min in
/// the low 6 bits of bytes sub and sub + 4; sub-blocks 4-7 keep the low nibbles in byte sub + 4
/// and the top two bits in the spare top bits of bytes sub - 4 (scale) and sub (min).
inline ScaleMin unpack_scale_min(const uint8_t* scales, int sub) {
  if (sub < 4) {
    return {static_cast<uint8_t>(scales[sub] & 63), static_cast<uint8_t>(scales[sub + 4] & 63)};
  }
  return {static_cast<uint8_t>((scales[sub + 4] & 0x0f) | ((scales[sub - 4] >> 6) << 4)),
          static_cast<uint8_t>((scales[sub + 4] >> 4) | ((scales[sub] >> 6) << 4))};
}

/// The quantized super-block before its levels are bit-packed.
struct ScaleMinBlock {
  Half d;
  Half dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t levels[kQK_K];  ///< per element, in [0, nmax]
};

/// Quantizes 256 values as ggml's Q4_K (nmax 15) and Q5_K (nmax 31) reference quantizers do:
/// fits every sub-block's scale and min with `search`, quantizes those to 6 bits against
/// d = max scale / 63 and dmin = max min / 63, then rounds each element again against its
/// sub-block's quantized scale and min.
ScaleMinBlock quantize_scale_min(const float* x, int nmax, const ScaleMinSearch& search);

}  // namespace strata::core
