// Claims the kernels rely on that the op-level tests cannot pin down: the vector exp's accuracy,
// fast conversions rounding exactly like core's reference, and the dot-tile contract.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <vector>

#include "core/blocks.h"
#include "core/float16.h"
#include "cpu/kernel_sets.h"

namespace strata::cpu {
namespace {

// Float bit patterns covering every exponent, both signs, subnormals, infinities and NaNs.
std::vector<float> awkward_floats(size_t n) {
  std::mt19937 rng(5);
  std::vector<float> v;
  for (float x : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-45f, -1e-40f, 65504.0f, 65520.0f,
                  65519.99f, 6.1e-5f, 5.96e-8f, 2.98e-8f, 3.4e38f}) {
    v.push_back(x);
  }
  while (v.size() < n) v.push_back(core::bits_to_float(rng()));
  return v;
}

TEST(Convert, F16MatchesCoreReferenceBitForBit) {
  const std::vector<float> x = awkward_floats(100003);
  std::vector<core::Half> fast(x.size());
  kernel_set().f32_to_f16(x.data(), fast.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) continue;  // NaN payloads may differ; NaN-ness is checked below
    ASSERT_EQ(fast[i].bits, core::float_to_half(x[i]).bits) << "x = " << x[i];
  }
  std::vector<float> back(x.size());
  kernel_set().f16_to_f32(fast.data(), back.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const float ref = core::half_to_float(fast[i]);
    ASSERT_TRUE(std::memcmp(&back[i], &ref, 4) == 0 || (std::isnan(back[i]) && std::isnan(ref)));
  }
}

TEST(Convert, BF16MatchesCoreReferenceBitForBit) {
  const std::vector<float> x = awkward_floats(100003);
  std::vector<core::BFloat16> fast(x.size());
  kernel_set().f32_to_bf16(x.data(), fast.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(fast[i].bits, core::float_to_bf16(x[i]).bits) << x[i];
}

// The vector exp is llama.cpp's approximation, step for step (so softmax and SiLU round as
// there): within 2.5 ulp, subnormal results down to about e^-104, 0 below.
TEST(VectorExp, WithinTwoAndAHalfUlpOverTheUsefulRange) {
  const auto exp8 = kernel_set().vector_exp8;
  if (exp8 == nullptr) GTEST_SKIP() << "kernel set " << kernel_set().name << " has no vector exp";
  std::vector<float> x;
  for (float v = -87.0f; v < 88.7f; v += 0.001237f) x.push_back(v);
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 88.72f, -87.3f}) x.push_back(v);
  while (x.size() % 8 != 0) x.push_back(0.5f);
  double worst_ulps = 0.0;
  for (size_t i = 0; i < x.size(); i += 8) {
    float y[8];
    exp8(x.data() + i, y);
    for (int j = 0; j < 8; ++j) {
      const double ref = std::exp(static_cast<double>(x[i + j]));
      const double ulp = std::ldexp(1.0, std::ilogb(ref) - 23);
      worst_ulps = std::max(worst_ulps, std::fabs(y[j] - ref) / ulp);
    }
  }
  EXPECT_LE(worst_ulps, 2.5);

  const float special[8] = {-INFINITY, -110.0f, -87.5f, 89.0f, INFINITY, NAN, 88.7f, -1e-45f};
  float y[8];
  exp8(special, y);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_NEAR(y[2], std::exp(-87.5), 1e-6 * std::exp(-87.5));
  EXPECT_EQ(y[3], INFINITY);
  EXPECT_EQ(y[4], INFINITY);
  EXPECT_TRUE(std::isnan(y[5]));
  EXPECT_TRUE(std::isfinite(y[6]) && y[6] > 3e38f);
  EXPECT_EQ(y[7], 1.0f);
}

// Softmax takes 16 lanes at a time where the set has AVX-512: every lane must round as the
// 8-lane exp rounds it, specials included.
TEST(VectorExp, SixteenLanesGiveTheBitsOfEight) {
  const auto exp8 = kernel_set().vector_exp8;
  const auto exp16 = kernel_set().vector_exp16;
  if (exp8 == nullptr || exp16 == nullptr) GTEST_SKIP() << kernel_set().name;
  std::vector<float> x;
  for (float v = -105.0f; v < 90.0f; v += 0.000731f) x.push_back(v);
  for (float v : {-INFINITY, INFINITY, NAN, 0.0f, -0.0f, 1e-45f, -1e-45f, 88.72f, -87.33f, 192.5f,
                  -192.5f, 1e30f, -1e30f})
    x.push_back(v);
  while (x.size() % 16 != 0) x.push_back(0.25f);
  for (size_t i = 0; i < x.size(); i += 16) {
    float a[16], b[16];
    exp16(x.data() + i, a);
    exp8(x.data() + i, b);
    exp8(x.data() + i + 8, b + 8);
    for (int j = 0; j < 16; ++j) {
      ASSERT_TRUE(std::memcmp(&a[j], &b[j], 4) == 0 || (std::isnan(a[j]) && std::isnan(b[j])))
          << x[i + j] << ": " << a[j] << " vs " << b[j];
    }
  }
}

// Every output of a tile equals the 1x1 tile of the same two rows, bit for bit.
TEST(DotTile, OutputsDoNotDependOnTileShape) {
  for (uint32_t id = 0; id < 64; ++id) {
    const std::optional<core::Type> type = core::type_from_id(id);
    if (!type || kernel_set().dot_kernels(*type) == nullptr) continue;
    const core::Type wt = *type;
    // Five 32-element blocks, or two K-quant super-blocks.
    const int64_t kK = core::block_size(wt) > 32 ? 2 * core::block_size(wt) : 160;
    const DotKernels& dk = *kernel_set().dot_kernels(wt);
    const size_t w_row = core::row_size(wt, kK);
    const size_t a_row = core::row_size(dk.act_type, kK);
    std::mt19937 rng(9);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> tmp(static_cast<size_t>(kK));
    std::vector<uint8_t> w(w_row * static_cast<size_t>(dk.max_w));
    std::vector<uint8_t> a(a_row * static_cast<size_t>(dk.max_a));
    for (int r = 0; r < dk.max_w; ++r) {
      for (float& v : tmp) v = dist(rng);
      core::traits(wt).from_float(tmp.data(), w.data() + r * w_row, kK);
    }
    for (int c = 0; c < dk.max_a; ++c) {
      for (float& v : tmp) v = dist(rng);
      kernel_set().convert_activations(dk.act_type, tmp.data(), a.data() + c * a_row, kK);
    }
    std::vector<float> full(static_cast<size_t>(dk.max_w * dk.max_a));
    dk.tile(kK, w.data(), w_row, dk.max_w, a.data(), a_row, dk.max_a, full.data(), 1, dk.max_w);
    if (dk.cached_tile != nullptr) {  // the form without prefetches gives the same bits
      std::vector<float> cached(full.size());
      dk.cached_tile(kK, w.data(), w_row, dk.max_w, a.data(), a_row, dk.max_a, cached.data(), 1,
                     dk.max_w);
      EXPECT_EQ(std::memcmp(cached.data(), full.data(), full.size() * 4), 0) << core::type_name(wt);
    }
    if (dk.slices.fn != nullptr && kK % dk.slices.step == 0) {
      // Slices of every length the step allows, the lanes kept between them: the same bits.
      for (int64_t len = dk.slices.step; len < kK; len += dk.slices.step) {
        std::vector<float> lanes(static_cast<size_t>(dk.max_w * dk.max_a) * 16);
        std::vector<float> sliced(full.size());
        for (int64_t k0 = 0; k0 < kK; k0 += len) {
          dk.slices.fn(kK, k0, std::min(kK, k0 + len), w.data(), w_row, dk.max_w, a.data(), a_row,
                       dk.max_a, lanes.data(), sliced.data(), 1, dk.max_w);
        }
        EXPECT_EQ(std::memcmp(sliced.data(), full.data(), full.size() * 4), 0)
            << core::type_name(wt) << " slices of " << len;
      }
    }
    for (int r = 0; r < dk.max_w; ++r) {
      for (int c = 0; c < dk.max_a; ++c) {
        float one = 0.0f;
        dk.tile(kK, w.data() + r * w_row, w_row, 1, a.data() + c * a_row, a_row, 1, &one, 1, 1);
        EXPECT_EQ(std::memcmp(&one, &full[static_cast<size_t>(r + c * dk.max_w)], 4), 0)
            << core::type_name(wt) << " pair " << r << "," << c;
      }
    }
  }
}

// The same for the packed kernels, which read activations in a layout of their own: every
// output of a full tile equals the 1x1 tile of its rows, and is close to the plain kernel's.
TEST(PackedDotTile, OutputsDoNotDependOnTileShape) {
  constexpr int64_t kK = 512;
  int checked = 0;
  for (core::Type wt : {core::Type::kQ4_0, core::Type::kQ8_0, core::Type::kF16}) {
    const PackedDot* pd = kernel_set().packed_dot(wt, kK);
    if (pd == nullptr) continue;
    ++checked;
    const DotKernels& dk = *kernel_set().dot_kernels(wt);
    const size_t w_row = core::row_size(wt, kK);
    const size_t a_row = pd->act_row_bytes(kK);
    const size_t plain_row = core::row_size(dk.act_type, kK);
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> tmp(static_cast<size_t>(kK));
    std::vector<uint8_t> w(w_row * static_cast<size_t>(pd->max_w));
    // 64-byte aligned packed rows, as mul_mat's scratch gives them.
    std::vector<uint8_t> a_buf(a_row * static_cast<size_t>(pd->max_a) + 64);
    uint8_t* a = a_buf.data() + (64 - reinterpret_cast<uintptr_t>(a_buf.data()) % 64) % 64;
    std::vector<uint8_t> plain(plain_row * static_cast<size_t>(pd->max_a));
    for (int r = 0; r < pd->max_w; ++r) {
      for (float& v : tmp) v = dist(rng);
      core::traits(wt).from_float(tmp.data(), w.data() + r * w_row, kK);
    }
    for (int c = 0; c < pd->max_a; ++c) {
      for (float& v : tmp) v = dist(rng);
      pd->pack(tmp.data(), a + c * a_row, kK);
      kernel_set().convert_activations(dk.act_type, tmp.data(), plain.data() + c * plain_row, kK);
    }
    std::vector<float> full(static_cast<size_t>(pd->max_w * pd->max_a));
    pd->tile(kK, w.data(), w_row, pd->max_w, a, a_row, pd->max_a, full.data(), 1, pd->max_w);
    if (pd->cached_tile != nullptr) {
      std::vector<float> cached(full.size());
      pd->cached_tile(kK, w.data(), w_row, pd->max_w, a, a_row, pd->max_a, cached.data(), 1,
                      pd->max_w);
      EXPECT_EQ(std::memcmp(cached.data(), full.data(), full.size() * 4), 0) << core::type_name(wt);
    }
    for (int r = 0; r < pd->max_w; ++r) {
      for (int c = 0; c < pd->max_a; ++c) {
        const float got = full[static_cast<size_t>(r + c * pd->max_w)];
        float one = 0.0f;
        pd->tile(kK, w.data() + r * w_row, w_row, 1, a + c * a_row, a_row, 1, &one, 1, 1);
        EXPECT_EQ(std::memcmp(&one, &got, 4), 0)
            << core::type_name(wt) << " pair " << r << "," << c;
        float ref = 0.0f;
        dk.tile(kK, w.data() + r * w_row, w_row, 1, plain.data() + c * plain_row, plain_row, 1,
                &ref, 1, 1);
        EXPECT_NEAR(got, ref, 1e-4f * (1.0f + std::fabs(ref))) << core::type_name(wt);
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no packed kernels in this build";
}

// The reference for one output: weight row w (k elements, in the weight type's blocks) against
// the activation row x (floats).
using RowReference = std::function<float(const uint8_t* w, const float* x, int64_t k)>;

// Every output of a packed kernel's tiles (full, partial, one activation row as in decode)
// equals the reference's for that pair of rows bit for bit, for each row length in ks.
int expect_packed_equals(core::Type wt, std::initializer_list<int64_t> ks,
                         const std::function<float(std::mt19937&, int64_t)>& value,
                         const RowReference& reference,
                         const PackedDot* (*kernel)(core::Type, int64_t) = nullptr) {
  int checked = 0;
  for (int64_t k : ks) {
    const PackedDot* pd = (kernel != nullptr ? kernel : kernel_set().packed_dot)(wt, k);
    if (pd == nullptr) continue;
    ++checked;
    std::mt19937 rng(static_cast<unsigned>(k) + 3);
    const size_t w_row = core::row_size(wt, k);
    const size_t a_row = pd->act_row_bytes(k);
    std::vector<float> tmp(static_cast<size_t>(k));
    std::vector<uint8_t> w(w_row * static_cast<size_t>(pd->max_w));
    for (int r = 0; r < pd->max_w; ++r) {
      for (int64_t i = 0; i < k; ++i) tmp[static_cast<size_t>(i)] = value(rng, i);
      core::traits(wt).from_float(tmp.data(), w.data() + r * w_row, k);
    }
    std::vector<uint8_t> a_buf(a_row * static_cast<size_t>(pd->max_a) + 64);
    uint8_t* a = a_buf.data() + (64 - reinterpret_cast<uintptr_t>(a_buf.data()) % 64) % 64;
    std::vector<float> x(static_cast<size_t>(k * pd->max_a));
    for (int c = 0; c < pd->max_a; ++c) {
      float* row = x.data() + c * k;
      for (int64_t i = 0; i < k; ++i) row[i] = value(rng, i);
      pd->pack(row, a + c * a_row, k);
    }
    for (int nw : {pd->max_w, 3, 1}) {
      for (int na : {pd->max_a, std::min(5, pd->max_a), 1}) {
        std::vector<float> got(static_cast<size_t>(pd->max_w * pd->max_a), -1.0f);
        pd->tile(k, w.data(), w_row, nw, a, a_row, na, got.data(), 1, pd->max_w);
        for (int r = 0; r < nw; ++r) {
          for (int c = 0; c < na; ++c) {
            const float ref = reference(w.data() + r * w_row, x.data() + c * k, k);
            EXPECT_EQ(0, std::memcmp(&ref, &got[static_cast<size_t>(r + c * pd->max_w)], 4))
                << core::type_name(wt) << " k " << k << " tile " << nw << "x" << na << " pair " << r
                << "," << c << ": " << got[static_cast<size_t>(r + c * pd->max_w)] << " against "
                << ref;
          }
        }
      }
    }
  }
  return checked;
}

// The plain kernel of the weight type, on activations converted as it reads them.
RowReference plain_kernel(core::Type wt) {
  return [wt](const uint8_t* w, const float* x, int64_t k) {
    const DotKernels& dk = *kernel_set().dot_kernels(wt);
    std::vector<uint8_t> plain(core::row_size(dk.act_type, k));
    kernel_set().convert_activations(dk.act_type, x, plain.data(), k);
    float out = 0.0f;
    dk.tile(k, w, core::row_size(wt, k), 1, plain.data(), plain.size(), 1, &out, 1, 1);
    return out;
  };
}

// The packed f16 path holds activations as the f32 values of their f16 roundings; every
// output equals the plain f16 kernel's bit for bit (the golden files depend on it), including
// values that round up across an f16 binade or halfway ties.
TEST(PackedDotTile, F16EqualsThePlainKernelBitForBit) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::uniform_int_distribution<int> scale(-12, 12);
  const auto value = [&](std::mt19937& rng, int64_t i) {
    // Every seventh element sits exactly halfway between two f16 values.
    if (i % 7 == 0) return std::ldexp(1.0f + (2 * (i % 50) + 1) / 2048.0f, scale(rng));
    return std::ldexp(dist(rng), scale(rng));
  };
  const core::Type f16 = core::Type::kF16;
  if (expect_packed_equals(f16, {16, 64, 80, 512, 2064}, value, plain_kernel(f16)) == 0) {
    GTEST_SKIP() << "no packed f16 kernel in this build";
  }
}

// Flash attention's f16 scores: each output one chain of fused multiply-adds over the elements
// in order, the activations rounded to f16, whatever the tile shape.
TEST(PackedDotTile, FlashScoresChainTheirMultiplyAdds) {
  if (kernel_set().flash_scores == nullptr) GTEST_SKIP() << "no flash score kernel in this set";
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::uniform_int_distribution<int> scale(-8, 8);
  const auto value = [&](std::mt19937& rng, int64_t) { return std::ldexp(dist(rng), scale(rng)); };
  const auto chain = [](const uint8_t* w, const float* x, int64_t k) {
    const auto* h = reinterpret_cast<const core::Half*>(w);
    float acc = 0.0f;
    for (int64_t i = 0; i < k; ++i) {
      acc =
          std::fma(core::half_to_float(h[i]), core::half_to_float(core::float_to_half(x[i])), acc);
    }
    return acc;
  };
  if (expect_packed_equals(core::Type::kF16, {16, 64, 128, 256}, value, chain,
                           kernel_set().flash_scores) == 0) {
    GTEST_SKIP() << "no flash score kernel for these lengths";
  }
}

// Weight levels of q8_0 or q4_0 block i of a row (q4_0: low nibbles are elements 0..15).
int weight_level(core::Type wt, const uint8_t* w, int64_t i, int j) {
  if (wt == core::Type::kQ8_0) return reinterpret_cast<const core::BlockQ8_0*>(w)[i].qs[j];
  const core::BlockQ4_0& b = reinterpret_cast<const core::BlockQ4_0*>(w)[i];
  const int byte = b.qs[j % 16];
  return (j < 16 ? byte & 0xf : byte >> 4) - 8;
}

float weight_scale(core::Type wt, const uint8_t* w, int64_t i) {
  const core::Half d = wt == core::Type::kQ8_0 ? reinterpret_cast<const core::BlockQ8_0*>(w)[i].d
                                               : reinterpret_cast<const core::BlockQ4_0*>(w)[i].d;
  return core::half_to_float(d);
}

// The packed q8_0 and q4_0 kernels (one weight row per lane) add, block by block, the block's
// exact integer dot product with the q8_0 activations times d_w * d_a in one fused multiply-add,
// whatever the tile shape: the same bits as this scalar loop, for row lengths whose blocks do
// and do not fill the kernels' groups, and blocks whose scales differ widely.
TEST(PackedDotTile, Q8_0AndQ4_0AddEachBlocksExactSum) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::uniform_int_distribution<int> scale(-8, 8);
  float block_scale = 1.0f;
  const auto value = [&](std::mt19937& rng, int64_t i) {
    if (i % 32 == 0) block_scale = std::ldexp(1.0f, scale(rng));
    return block_scale * dist(rng);
  };
  int checked = 0;
  for (core::Type wt : {core::Type::kQ8_0, core::Type::kQ4_0}) {
    const RowReference block_sums = [wt](const uint8_t* w, const float* x, int64_t k) {
      std::vector<core::BlockQ8_0> act(static_cast<size_t>(k / 32));
      kernel_set().quantize_q8_0(x, act.data(), k);
      float acc = 0.0f;
      for (int64_t i = 0; i < k / 32; ++i) {
        int32_t sum = 0;
        for (int j = 0; j < 32; ++j) sum += weight_level(wt, w, i, j) * act[i].qs[j];
        const float d = weight_scale(wt, w, i) * core::half_to_float(act[i].d);
        acc = std::fma(static_cast<float>(sum), d, acc);
      }
      return acc;
    };
    checked += expect_packed_equals(wt, {32, 64, 96, 192, 512, 2048, 2112}, value, block_sums);
  }
  if (checked == 0) GTEST_SKIP() << "no packed q8_0 or q4_0 kernel in this build";
}

// A packed kernel's panel path (prefill: weight rows rearranged once per chunk) gives exactly
// the outputs of its plain tile (decode: rows read in place), for partial tiles, strided
// outputs and row lengths that end mid-way through the kernels' groups of blocks.
TEST(PackedDotTile, PanelEqualsRowsInPlace) {
  int checked = 0;
  for (core::Type wt : {core::Type::kQ4_0, core::Type::kQ8_0, core::Type::kQ4_K, core::Type::kQ5_K,
                        core::Type::kQ6_K, core::Type::kF16}) {
    // f16 has a panel for short rows only (attention heads); q5_k and q6_k take whole
    // super-blocks.
    const bool super_blocks = wt == core::Type::kQ5_K || wt == core::Type::kQ6_K;
    const std::vector<int64_t> ks = wt == core::Type::kF16 ? std::vector<int64_t>{16, 64, 112, 128}
                                    : super_blocks
                                        ? std::vector<int64_t>{256, 768, 5632}
                                        : std::vector<int64_t>{32 * 3, 64 * 5, 512, 32 * 65};
    for (int64_t k : ks) {
      const PackedDot* pd = kernel_set().packed_dot(wt, k);
      if (pd == nullptr || pd->pack_panel == nullptr) continue;
      ++checked;
      const size_t w_row = core::row_size(wt, k);
      const size_t a_row = pd->act_row_bytes(k);
      std::mt19937 rng(static_cast<unsigned>(k));
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      std::vector<float> tmp(static_cast<size_t>(k));
      // The rows end the allocation, so a read past the last block would show under ASan.
      std::vector<uint8_t> w(w_row * static_cast<size_t>(pd->max_w));
      for (int r = 0; r < pd->max_w; ++r) {
        for (float& v : tmp) v = dist(rng);
        core::traits(wt).from_float(tmp.data(), w.data() + r * w_row, k);
      }
      std::vector<uint8_t> a_buf(a_row * static_cast<size_t>(pd->max_a) + 64);
      uint8_t* a = a_buf.data() + (64 - reinterpret_cast<uintptr_t>(a_buf.data()) % 64) % 64;
      for (int c = 0; c < pd->max_a; ++c) {
        for (float& v : tmp) v = dist(rng);
        pd->pack(tmp.data(), a + c * a_row, k);
      }
      std::vector<uint8_t> panel_buf(pd->panel_bytes(k) + 64);
      uint8_t* panel =
          panel_buf.data() + (64 - reinterpret_cast<uintptr_t>(panel_buf.data()) % 64) % 64;
      for (int nw : {pd->max_w, pd->max_w / 2 + 1, 1}) {
        for (int na : {pd->max_a, std::min(3, pd->max_a), 1}) {
          // Outputs strided both ways (ldo_w 1: one store per activation row; else scattered).
          for (int64_t ldo_w : {int64_t{1}, int64_t{pd->max_a}}) {
            const int64_t ldo_a = ldo_w == 1 ? pd->max_w : 1;
            std::vector<float> rows(static_cast<size_t>(pd->max_w * pd->max_a), -1.0f);
            std::vector<float> panelled = rows;
            pd->tile(k, w.data(), w_row, nw, a, a_row, na, rows.data(), ldo_w, ldo_a);
            pd->pack_panel(k, w.data(), w_row, nw, panel);
            pd->panel_tile(k, panel, 0, nw, a, a_row, na, panelled.data(), ldo_w, ldo_a);
            EXPECT_EQ(0, std::memcmp(rows.data(), panelled.data(), rows.size() * sizeof(float)))
                << core::type_name(wt) << " k " << k << " tile " << nw << "x" << na;
            // Nothing outside the tile is written.
            for (int r = 0; r < pd->max_w; ++r) {
              for (int c = 0; c < pd->max_a; ++c) {
                const float v = rows[static_cast<size_t>(r * ldo_w + c * ldo_a)];
                if (r >= nw || c >= na) {
                  EXPECT_EQ(v, -1.0f) << r << "," << c;
                }
              }
            }
          }
        }
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no packed kernel with panels in this build";
}

}  // namespace
}  // namespace strata::cpu
