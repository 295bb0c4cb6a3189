#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/blocks.h"
#include "core/float16.h"
#include "core/types.h"

namespace strata::core {
namespace {

TEST(Types, GgufIdsAndBlockLayouts) {
  EXPECT_EQ(static_cast<uint32_t>(Type::kBF16), 30u);
  EXPECT_EQ(type_size(Type::kQ4_0), sizeof(BlockQ4_0));
  EXPECT_EQ(type_size(Type::kQ8_0), sizeof(BlockQ8_0));
  EXPECT_EQ(block_size(Type::kQ4_K), 256);
  EXPECT_EQ(type_size(Type::kQ6_K), 210u);
  EXPECT_EQ(row_size(Type::kQ8_0, 64), 68u);
  EXPECT_FALSE(type_from_id(4).has_value());  // removed Q4_2
  EXPECT_EQ(type_from_name("q8_0"), Type::kQ8_0);
}

#if defined(__F16C__)
// The portable conversions must agree with the hardware's, bit for bit, everywhere.
TEST(Float16, HalfToFloatMatchesHardwareForAllValues) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float ours = half_to_float(Half{static_cast<uint16_t>(b)});
    const float hw = _cvtsh_ss(static_cast<unsigned short>(b));
    if (std::isnan(hw)) {
      EXPECT_TRUE(std::isnan(ours));
    } else {
      EXPECT_EQ(float_to_bits(ours), float_to_bits(hw)) << b;
    }
  }
}

TEST(Float16, FloatToHalfMatchesHardwareRounding) {
  std::mt19937 rng(7);
  for (int i = 0; i < 2000000; ++i) {
    const uint32_t bits = rng();
    const float f = bits_to_float(bits);
    if (std::isnan(f)) continue;
    const uint16_t hw = _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
    ASSERT_EQ(float_to_half(f).bits, hw) << std::hexfloat << f;
  }
}
#endif

TEST(BFloat16, RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f).bits, 0x3f80);
  EXPECT_EQ(float_to_bf16(bits_to_float(0x3f808000)).bits, 0x3f80);  // tie -> even
  EXPECT_EQ(float_to_bf16(bits_to_float(0x3f818000)).bits, 0x3f82);  // tie -> even (up)
  EXPECT_EQ(bf16_to_float(BFloat16{0xc000}), -2.0f);
}

// Quantize then dequantize: the error per element is bounded by half a quantization step
// (a whole step for Q4_0, whose 16 levels are asymmetric: +8 steps clamps to +7).
TEST(Quantization, RoundTripErrorIsWithinHalfAStep) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(32 * 40), y(x.size());
  for (float& v : x) v = nd(rng);
  for (Type t : {Type::kQ8_0, Type::kQ4_0}) {
    std::vector<uint8_t> q(row_size(t, static_cast<int64_t>(x.size())));
    traits(t).from_float(x.data(), q.data(), static_cast<int64_t>(x.size()));
    traits(t).to_float(q.data(), y.data(), static_cast<int64_t>(x.size()));
    for (size_t b = 0; b < x.size() / 32; ++b) {
      float amax = 0;
      for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
      const float step = t == Type::kQ8_0 ? amax / 127 : amax / 8;
      for (size_t j = 0; j < 32; ++j) {
        const float bound = t == Type::kQ4_0 ? step : step * 0.5f;
        EXPECT_LE(std::fabs(x[b * 32 + j] - y[b * 32 + j]), bound + 1e-3f * amax)
            << type_name(t) << " block " << b;
      }
    }
  }
}

}  // namespace
}  // namespace strata::core
