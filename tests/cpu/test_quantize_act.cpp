// The vectorised activation quantizers against their scalar definitions, byte for byte, and
// the packed layout's independence from how a row is split into pieces.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/float16.h"
#include "core/types.h"
#include "cpu/kernel_sets.h"

namespace strata::cpu {
namespace {

using core::Type;

// Rows of n floats, one kind of block after another: random normals at many scales, exact
// rounding ties (a block whose scale is 1 holding k + 1/2 values), zeros, a lone non-zero,
// equal magnitudes of both signs, subnormals, huge values, infinities, NaNs and raw bit
// patterns.
std::vector<float> test_rows(int64_t block, int64_t blocks, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> level(-127, 126);
  std::vector<float> v(static_cast<size_t>(block * blocks));
  for (int64_t b = 0; b < blocks; ++b) {
    float* x = v.data() + b * block;
    const int kind = static_cast<int>(b % 10);
    const float scale = std::ldexp(1.0f, static_cast<int>(rng() % 60) - 30);
    for (int64_t j = 0; j < block; ++j) {
      switch (kind) {
        case 0:
        case 1:
          x[j] = normal(rng) * scale;
          break;
        case 2:  // ties: with 127 present (q8_0) or -127 first (q8_k) the scale is exactly 1
          x[j] = static_cast<float>(level(rng)) + 0.5f;
          break;
        case 3:
          x[j] = 0.0f;
          break;
        case 4:
          x[j] = j == block / 3 ? normal(rng) : (j % 2 ? 0.0f : -0.0f);
          break;
        case 5:
          x[j] = (j % 3 == 0 ? -1.0f : 1.0f) * scale;
          break;
        case 6:
          x[j] = normal(rng) * 1e-41f;
          break;
        case 7:
          x[j] = normal(rng) * 3e38f;
          break;
        case 8:
          x[j] = j == 5 ? (b % 20 == 8 ? NAN : INFINITY) : normal(rng);
          break;
        default:
          x[j] = core::bits_to_float(static_cast<uint32_t>(rng()));
          break;
      }
    }
    if (kind == 2) {
      x[0] = (b % 20 == 2) ? 127.0f : -127.0f;
      x[block - 1] = 127.0f;
    }
  }
  return v;
}

void expect_same_as(Type type, void (*reference)(const float*, void*, int64_t),
                    void (*fast)(const float*, void*, int64_t)) {
  const int64_t block = core::block_size(type);
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    const int64_t blocks = 200;
    const std::vector<float> x = test_rows(block, blocks, seed);
    const size_t bytes = core::row_size(type, block * blocks);
    std::vector<uint8_t> want(bytes, 0xcd), got(bytes, 0x5a);
    reference(x.data(), want.data(), block * blocks);
    fast(x.data(), got.data(), block * blocks);
    for (int64_t b = 0; b < blocks; ++b) {
      const size_t off = static_cast<size_t>(b) * core::type_size(type);
      ASSERT_EQ(0, std::memcmp(want.data() + off, got.data() + off, core::type_size(type)))
          << core::type_name(type) << " seed " << seed << " block " << b;
    }
  }
}

// llama.cpp's activation rounding (127 / amax, ties to even), written out plainly.
void q8_0_activation_reference(const float* x, void* dst, int64_t n) {
  auto* b = static_cast<core::BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / 32; ++i) kernel_set().q8_0_block_portable(x + 32 * i, b[i]);
}

TEST(QuantizeAct, Q8_0MatchesScalarActivationQuantizerBitForBit) {
  expect_same_as(Type::kQ8_0, q8_0_activation_reference, kernel_set().quantize_q8_0);
}

// Differs from the weight quantizer only in rounding: never by more than one level.
TEST(QuantizeAct, Q8_0ActivationsWithinOneLevelOfWeightQuantizer) {
  const std::vector<float> x = test_rows(32, 200, 3);
  std::vector<core::BlockQ8_0> a(200), w(200);
  kernel_set().quantize_q8_0(x.data(), a.data(), 32 * 200);
  core::traits(Type::kQ8_0).from_float(x.data(), w.data(), 32 * 200);
  int differing = 0;
  for (size_t b = 0; b < a.size(); ++b) {
    EXPECT_EQ(a[b].d.bits, w[b].d.bits);
    for (int j = 0; j < 32; ++j) {
      EXPECT_LE(std::abs(a[b].qs[j] - w[b].qs[j]), 1) << b << " " << j;
      differing += a[b].qs[j] != w[b].qs[j];
    }
  }
  EXPECT_GT(differing, 0);  // ties exist in the rows: the two roundings do differ
}

TEST(QuantizeAct, Q8_KMatchesCoreReferenceBitForBit) {
  expect_same_as(Type::kQ8_K, core::traits(Type::kQ8_K).from_float, kernel_set().quantize_q8_k);
}

// mul_mat packs a row in pieces when there are fewer rows than threads.
TEST(QuantizeAct, PackingInPiecesEqualsPackingWhole) {
  for (Type type : {Type::kQ4_0, Type::kQ8_0, Type::kQ4_K, Type::kQ6_K}) {
    const int64_t k = 4096;
    const PackedDot* p = kernel_set().packed_dot(type, k);
    if (p == nullptr) continue;
    const std::vector<float> x = test_rows(k, 1, 7);
    const size_t bytes = p->act_row_bytes(k);
    std::vector<uint8_t> whole_buf(bytes + 64), pieces_buf(bytes + 64);
    uint8_t* whole = whole_buf.data() + (64 - reinterpret_cast<uintptr_t>(whole_buf.data()) % 64);
    uint8_t* pieces =
        pieces_buf.data() + (64 - reinterpret_cast<uintptr_t>(pieces_buf.data()) % 64);
    p->pack(x.data(), whole, k);
    const int64_t groups = k / p->group;
    for (int64_t g0 = 0; g0 < groups;) {
      const int64_t g1 = std::min(groups, g0 + 1 + g0 % 3);
      p->pack(x.data() + g0 * p->group, pieces + p->act_row_bytes(g0 * p->group),
              (g1 - g0) * p->group);
      g0 = g1;
    }
    EXPECT_EQ(0, std::memcmp(whole, pieces, bytes)) << core::type_name(type);
  }
}

}  // namespace
}  // namespace strata::cpu
