// Scalar conversions between float and the 16-bit float formats stored in GGUF files.
// Portable and exact (round to nearest even); kernels use hardware conversions where present.
#pragma once

#include <cstdint>
#include <cstring>

namespace strata::core {

/// IEEE half precision, stored as raw bits.
struct Half {
  uint16_t bits;
};
/// bfloat16 (the upper half of an IEEE float), stored as raw bits.
struct BFloat16 {
  uint16_t bits;
};

inline float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline uint32_t float_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float half_to_float(Half h) {
  const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  const uint32_t exp = (h.bits >> 10) & 0x1fu;
  const uint32_t mant = h.bits & 0x3ffu;
  if (exp == 0x1f) return bits_to_float(sign | 0x7f800000u | (mant << 13));  // inf / nan
  if (exp != 0) return bits_to_float(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return bits_to_float(sign);
  // Subnormal half: value = mant * 2^-24, exact in float.
  const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
  return sign ? -v : v;
}

inline Half float_to_half(float f) {
  const uint32_t u = float_to_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or nan; keep nan quiet
    return Half{static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u))};
  }
  if (abs >= 0x477ff000u) return Half{static_cast<uint16_t>(sign | 0x7c00u)};  // rounds to inf
  if (abs < 0x38800000u) {
    // Result is subnormal (or zero): scale so the float's integer part is the half mantissa,
    // letting the FPU's round-to-nearest-even do the rounding.
    const float scaled = bits_to_float(abs) * 16777216.0f;     // * 2^24
    const float rounded = scaled + 12582912.0f - 12582912.0f;  // 1.5 * 2^23 trick, RNE
    return Half{static_cast<uint16_t>(sign | static_cast<uint16_t>(rounded))};
  }
  // Normal: rebias exponent, round mantissa from 23 to 10 bits to nearest even.
  const uint32_t mant_odd = (abs >> 13) & 1u;
  const uint32_t rounded = abs + 0xfffu + mant_odd;
  return Half{static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13))};
}

inline float bf16_to_float(BFloat16 h) {
  return bits_to_float(static_cast<uint32_t>(h.bits) << 16);
}

inline BFloat16 float_to_bf16(float f) {
  const uint32_t u = float_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return BFloat16{static_cast<uint16_t>((u >> 16) | 64u)};
  return BFloat16{static_cast<uint16_t>((u + (0x7fffu + ((u >> 16) & 1u))) >> 16)};
}

}  // namespace strata::core
