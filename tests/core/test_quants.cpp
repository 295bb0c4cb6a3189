// The quantized types: layouts and traits, bit-exactness with ggml (golden hashes), and the
// error of a quantize / dequantize round trip on random, constant, tiny and huge data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/blocks.h"
#include "core/float16.h"
#include "core/types.h"

namespace strata::core {
namespace {

const Type kQuantized[] = {Type::kQ4_0, Type::kQ4_1, Type::kQ5_0, Type::kQ5_1,
                           Type::kQ8_0, Type::kQ8_1, Type::kQ2_K, Type::kQ3_K,
                           Type::kQ4_K, Type::kQ5_K, Type::kQ6_K, Type::kQ8_K};

/// Pseudo-random numbers that are the same on every platform (std's distributions are not).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint32_t bits() {
    s_ ^= s_ << 13;
    s_ ^= s_ >> 7;
    s_ ^= s_ << 17;
    return static_cast<uint32_t>(s_ >> 32);
  }
  /// Uniform in [-1, 1), a multiple of 2^-20, so that sums of a few are exact.
  float uniform() { return static_cast<float>(bits() >> 11) * 0x1p-20f - 1.0f; }
  /// Bell-shaped in (-4, 4): the sum of four uniforms (RMS about 1.15).
  float bell() {
    float sum = uniform();
    sum += uniform();
    sum += uniform();
    sum += uniform();
    return sum;
  }

 private:
  uint64_t s_;
};

uint64_t fnv1a(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

/// Hash of float bit patterns, every NaN counted as the same NaN (payloads are not portable).
uint64_t hash_floats(const std::vector<float>& y) {
  std::vector<uint32_t> u(y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    u[i] = std::isnan(y[i]) ? 0x7fc00000u : float_to_bits(y[i]);
  }
  return fnv1a(u.data(), u.size() * sizeof(uint32_t));
}

std::vector<uint8_t> quantize(Type t, const std::vector<float>& x) {
  const auto n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> q(row_size(t, n));
  traits(t).from_float(x.data(), q.data(), n);
  return q;
}

std::vector<float> dequantize(Type t, const std::vector<uint8_t>& q, size_t n) {
  std::vector<float> y(n);
  traits(t).to_float(q.data(), y.data(), static_cast<int64_t>(n));
  return y;
}

std::vector<float> round_trip(Type t, const std::vector<float>& x) {
  return dequantize(t, quantize(t, x), x.size());
}

TEST(Quants, TraitsMatchTheBlockLayouts) {
  EXPECT_EQ(type_size(Type::kQ4_1), sizeof(BlockQ4_1));
  EXPECT_EQ(type_size(Type::kQ5_0), sizeof(BlockQ5_0));
  EXPECT_EQ(type_size(Type::kQ5_1), sizeof(BlockQ5_1));
  EXPECT_EQ(type_size(Type::kQ8_1), sizeof(BlockQ8_1));
  EXPECT_EQ(type_size(Type::kQ2_K), sizeof(BlockQ2_K));
  EXPECT_EQ(type_size(Type::kQ3_K), sizeof(BlockQ3_K));
  EXPECT_EQ(type_size(Type::kQ4_K), sizeof(BlockQ4_K));
  EXPECT_EQ(type_size(Type::kQ5_K), sizeof(BlockQ5_K));
  EXPECT_EQ(type_size(Type::kQ6_K), sizeof(BlockQ6_K));
  EXPECT_EQ(type_size(Type::kQ8_K), sizeof(BlockQ8_K));
  for (Type t : kQuantized) {
    EXPECT_TRUE(is_quantized(t));
    EXPECT_TRUE(is_computable(t)) << type_name(t);
    EXPECT_NE(traits(t).from_float, nullptr) << type_name(t);
    EXPECT_EQ(type_from_name(type_name(t)), t);
  }
  for (const char* name :
       {"q4_1", "q5_0", "q5_1", "q8_1", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "q8_k"}) {
    ASSERT_TRUE(type_from_name(name).has_value()) << name;
  }
  EXPECT_FALSE(is_computable(Type::kI8));
  EXPECT_FALSE(is_computable(Type::kF64));
}

TEST(Quants, DotTypesFollowLlamaCpp) {
  EXPECT_EQ(dot_type(Type::kF32), Type::kF32);
  EXPECT_EQ(dot_type(Type::kF16), Type::kF16);
  EXPECT_EQ(dot_type(Type::kBF16), Type::kBF16);
  for (Type t : {Type::kQ4_0, Type::kQ5_0, Type::kQ8_0}) EXPECT_EQ(dot_type(t), Type::kQ8_0);
  for (Type t : {Type::kQ4_1, Type::kQ5_1}) EXPECT_EQ(dot_type(t), Type::kQ8_1);
  for (Type t : {Type::kQ2_K, Type::kQ3_K, Type::kQ4_K, Type::kQ5_K, Type::kQ6_K}) {
    EXPECT_EQ(dot_type(t), Type::kQ8_K) << type_name(t);
  }
  // Every dot type is one activations can be converted to.
  for (Type t : kQuantized) EXPECT_NE(traits(dot_type(t)).from_float, nullptr);
}

// Hashes of ggml's own results (quantize_row_*_ref and dequantize_row_* from llama.cpp's
// ggml-base), taken on the inputs below: our bytes and floats must be identical to its.
struct Golden {
  Type type;
  uint64_t quantized;    ///< hash of the blocks quantized from golden_input()
  uint64_t dequantized;  ///< hash of the floats dequantized from random_blocks(); 0: ggml has none
};
const Golden kGolden[] = {
    {Type::kQ4_0, 0x0ee22aa2c38fc7e2ull, 0x47de88fd55f75195ull},
    {Type::kQ4_1, 0xb5fe2b6646a25aa6ull, 0x19c621dfc3d499c3ull},
    {Type::kQ5_0, 0x47d185156625c63cull, 0xb7b80aa48890215eull},
    {Type::kQ5_1, 0xb8fc0737165bee86ull, 0xe2cef289f74fadd7ull},
    {Type::kQ8_0, 0x5740a9cb595fcc54ull, 0x3246220bac319ec0ull},
    {Type::kQ8_1, 0x29cd571475a15480ull, 0},
    {Type::kQ2_K, 0xd4cf733478ff61d9ull, 0x686bc06123de1294ull},
    {Type::kQ3_K, 0xb8c7c13a0353a94aull, 0xca4b6d99cb1ea123ull},
    {Type::kQ4_K, 0xff6342316d776548ull, 0x41e97396f26f36c5ull},
    {Type::kQ5_K, 0x90c4698eb6b335e4ull, 0x936debeaee82f78full},
    {Type::kQ6_K, 0x7dc3d050e08c4879ull, 0xde7597d425eeb114ull},
    {Type::kQ8_K, 0x5aaef805c2f0afb1ull, 0xc10d87c2925a69a1ull},
};
constexpr int64_t kGoldenN = 2048;

/// Eight super-blocks of bell-shaped values at scales from 2^-10 to 2^7, two with an offset,
/// with a zero sub-block, a constant sub-block and an outlier. Every value is exact in float.
std::vector<float> golden_input() {
  Rng rng(42);
  const int exps[8] = {0, -7, 7, -2, 0, 2, -10, 1};
  const float offsets[8] = {0, 0, 0, 0.25f, -2.0f, 0, 0, 0};
  std::vector<float> x(kGoldenN);
  for (int b = 0; b < 8; ++b) {
    for (int j = 0; j < 256; ++j) x[256 * b + j] = std::ldexp(rng.bell(), exps[b]) + offsets[b];
  }
  for (int j = 0; j < 32; ++j) x[256 * 5 + j] = 0.0f;
  for (int j = 64; j < 96; ++j) x[256 * 7 + j] = 0.75f;
  x[256 * 1 + 100] = 3.0f;
  return x;
}

/// Random bytes as blocks: scales of every magnitude, infinities and NaNs included.
std::vector<uint8_t> random_blocks(Type t) {
  Rng rng(7);
  std::vector<uint8_t> q(row_size(t, kGoldenN));
  for (uint8_t& c : q) c = static_cast<uint8_t>(rng.bits());
  return q;
}

TEST(Quants, QuantizationIsBitExactWithGgml) {
  const std::vector<float> x = golden_input();
  for (const Golden& g : kGolden) {
    const std::vector<uint8_t> q = quantize(g.type, x);
    EXPECT_EQ(fnv1a(q.data(), q.size()), g.quantized) << type_name(g.type);
  }
}

TEST(Quants, DequantizationIsBitExactWithGgml) {
  for (const Golden& g : kGolden) {
    if (g.dequantized == 0) continue;
    const std::vector<float> y = dequantize(g.type, random_blocks(g.type), kGoldenN);
    EXPECT_EQ(hash_floats(y), g.dequantized) << type_name(g.type);
  }
}

// Error bounds of a round trip of bell-shaped data: relative RMS error, and the largest
// element error relative to the largest magnitude of its 256 elements. Measured values plus
// about 10%; they follow from the step sizes (RMS of uniform rounding error = step / sqrt(12)),
// e.g. Q4_0's step is amax / 8 and its worst case one step (+8 steps clamps to +7).
struct Bound {
  Type type;
  double rms;
  double max;
};
const Bound kBounds[] = {
    {Type::kQ4_0, 0.095, 0.126}, {Type::kQ4_1, 0.086, 0.075},  {Type::kQ5_0, 0.047, 0.065},
    {Type::kQ5_1, 0.042, 0.036}, {Type::kQ8_0, 0.006, 0.0045}, {Type::kQ8_1, 0.006, 0.0045},
    {Type::kQ2_K, 0.33, 0.43},   {Type::kQ3_K, 0.167, 0.23},   {Type::kQ4_K, 0.079, 0.10},
    {Type::kQ5_K, 0.040, 0.06},  {Type::kQ6_K, 0.020, 0.018},  {Type::kQ8_K, 0.0077, 0.0044},
};

struct Errors {
  double rms = 0;  ///< relative to the data's RMS
  double max = 0;  ///< largest |error| / largest |x| of its 256 elements
  bool finite = true;
};

Errors measure(const std::vector<float>& x, const std::vector<float>& y) {
  Errors e;
  double err = 0, ref = 0;
  for (size_t b = 0; b < x.size() / 256; ++b) {
    float amax = 0;
    for (size_t j = 0; j < 256; ++j) amax = std::max(amax, std::fabs(x[256 * b + j]));
    for (size_t j = 0; j < 256; ++j) {
      const size_t i = 256 * b + j;
      e.finite = e.finite && std::isfinite(y[i]);
      const double d = static_cast<double>(y[i]) - x[i];
      err += d * d;
      ref += static_cast<double>(x[i]) * x[i];
      if (amax > 0) e.max = std::max(e.max, std::fabs(d) / amax);
    }
  }
  e.rms = ref > 0 ? std::sqrt(err / ref) : std::sqrt(err);
  return e;
}

TEST(Quants, RoundTripErrorIsTypicalOfEachFormat) {
  Rng rng(3);
  std::vector<float> x(256 * 512);
  for (float& v : x) v = rng.bell();
  for (const Bound& b : kBounds) {
    const Errors e = measure(x, round_trip(b.type, x));
    EXPECT_TRUE(e.finite) << type_name(b.type);
    EXPECT_LT(e.rms, b.rms) << type_name(b.type);
    EXPECT_LT(e.max, b.max) << type_name(b.type);
  }
}

// The 32-element formats have a per-element guarantee: half a step (a whole step for Q4_0 and
// Q5_0, whose largest positive level is one short), plus the fp16 rounding of the scale and
// min, 2^-11 relative, times the number of steps.
TEST(Quants, BlockFormatsStayWithinTheirStep) {
  Rng rng(11);
  std::vector<float> x(32 * 400);
  for (size_t b = 0; b < x.size() / 32; ++b) {
    const float scale = std::ldexp(1.0f, static_cast<int>(b % 9) - 4);
    const float offset = b % 3 == 0 ? rng.uniform() * 4 * scale : 0.0f;
    for (size_t j = 0; j < 32; ++j) x[32 * b + j] = rng.bell() * scale + offset;
  }
  for (Type t : {Type::kQ4_0, Type::kQ4_1, Type::kQ5_0, Type::kQ5_1, Type::kQ8_0, Type::kQ8_1}) {
    const std::vector<float> y = round_trip(t, x);
    for (size_t b = 0; b < x.size() / 32; ++b) {
      const float* xb = x.data() + 32 * b;
      const float lo = *std::min_element(xb, xb + 32), hi = *std::max_element(xb, xb + 32);
      const float amax = std::max(std::fabs(lo), std::fabs(hi));
      float bound = 0;
      switch (t) {
        case Type::kQ4_0:
          bound = amax / 8 + amax * 0x1p-10f;
          break;
        case Type::kQ5_0:
          bound = amax / 16 + amax * 0x1p-10f;
          break;
        case Type::kQ4_1:
          bound = (hi - lo) / 30 + ((hi - lo) + std::fabs(lo)) * 0x1p-10f;
          break;
        case Type::kQ5_1:
          bound = (hi - lo) / 62 + ((hi - lo) + std::fabs(lo)) * 0x1p-10f;
          break;
        default:
          bound = amax / 254 + amax * 0x1p-10f;
          break;
      }
      for (size_t j = 0; j < 32; ++j) {
        ASSERT_LE(std::fabs(y[32 * b + j] - xb[j]), bound) << type_name(t) << " block " << b;
      }
    }
  }
}

TEST(Quants, ZeroBlocksStayExactlyZero) {
  const std::vector<float> x(512, 0.0f);
  for (Type t : kQuantized) {
    const std::vector<float> y = round_trip(t, x);
    for (float v : y) ASSERT_EQ(v, 0.0f) << type_name(t);
  }
}

TEST(Quants, ConstantBlocksKeepTheirValue) {
  for (float c : {0.75f, -1.25f, 3e4f, -3e4f}) {
    const std::vector<float> x(512, c);
    for (Type t : kQuantized) {
      const std::vector<float> y = round_trip(t, x);
      // K-quant scales are quantized twice (fp16, then 6 bits), hence the looser bound.
      const float bound = std::fabs(c) * (block_size(t) == 256 ? 0.02f : 0x1p-10f);
      for (float v : y) ASSERT_NEAR(v, c, bound) << type_name(t) << " constant " << c;
    }
  }
}

// Scales are fp16 (float for Q8_K): values whose scale underflows dequantize to 0, never to
// NaN; values up to a few thousand (a block's scale and min must stay below 65504) keep the
// format's usual relative error.
TEST(Quants, TinyAndHugeValues) {
  Rng rng(5);
  std::vector<float> bell(256 * 16);
  for (float& v : bell) v = rng.bell();
  for (float scale : {1e-20f, 1e-40f}) {
    std::vector<float> x(bell.size());
    for (size_t i = 0; i < x.size(); ++i) x[i] = bell[i] * scale;
    for (Type t : kQuantized) {
      const std::vector<float> y = round_trip(t, x);
      for (size_t i = 0; i < x.size(); ++i) {
        ASSERT_TRUE(std::isfinite(y[i])) << type_name(t) << " scale " << scale;
        ASSERT_LE(std::fabs(y[i] - x[i]), 4 * scale) << type_name(t) << " scale " << scale;
      }
    }
  }
  std::vector<float> x(bell.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = bell[i] * 3000.0f;
  for (const Bound& b : kBounds) {
    const Errors e = measure(x, round_trip(b.type, x));
    EXPECT_TRUE(e.finite) << type_name(b.type);
    EXPECT_LT(e.rms, b.rms) << type_name(b.type);
  }
}

TEST(Quants, ActivationBlocksCarryTheirSums) {
  Rng rng(9);
  std::vector<float> x(512);
  for (float& v : x) v = rng.bell();
  const std::vector<uint8_t> q1 = quantize(Type::kQ8_1, x);
  for (size_t b = 0; b < x.size() / kQK8_1; ++b) {
    BlockQ8_1 blk;
    std::memcpy(&blk, q1.data() + b * sizeof blk, sizeof blk);
    int sum = 0;
    for (int8_t q : blk.qs) sum += q;
    const float d = half_to_float(blk.d);
    EXPECT_NEAR(half_to_float(blk.s), d * static_cast<float>(sum),
                std::fabs(d * static_cast<float>(sum)) * 0x1p-9f + d);
  }
  const std::vector<uint8_t> qk = quantize(Type::kQ8_K, x);
  for (size_t b = 0; b < x.size() / kQK_K; ++b) {
    BlockQ8_K blk;
    std::memcpy(&blk, qk.data() + b * sizeof blk, sizeof blk);
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += blk.qs[16 * g + j];
      EXPECT_EQ(blk.bsums[g], sum);
    }
  }
}

}  // namespace
}  // namespace strata::core
