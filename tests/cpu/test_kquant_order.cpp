// The q4_k, q5_k and q6_k dot products round exactly as llama.cpp's x86 kernels do: every path
// (tiles of every shape mul_mat uses, hence decode and prefill; the packed path when there is
// one; mul_mat itself on 1 and 2 threads) gives the bits of the scalar emulation in
// kquant_reference.cpp, on random blocks with extreme scales. The exception is a packed path
// that keeps one weight row per lane (q4_k with AVX-512 VNNI): it sums in its own order, which
// lanes_dot_q4_k emulates, and is held to that the same way.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/context.h"
#include "core/float16.h"
#include "core/graph.h"
#include "core/ops.h"
#include "cpu/graph_compute.h"
#include "cpu/kernel_sets.h"
#include "kquant_reference.h"
#include "test_util.h"

namespace strata::cpu {
namespace {

using core::BlockQ4_K;
using core::BlockQ5_K;
using core::BlockQ6_K;
using core::BlockQ8_K;
using core::kQK_K;
using core::Type;

bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// An f16 scale: usually of ordinary size, sometimes the largest, a subnormal, zero or negative.
core::Half random_scale(std::mt19937& rng) {
  switch (rng() % 8) {
    case 0:
      return core::float_to_half(65504.0f);
    case 1:
      return core::Half{static_cast<uint16_t>(1 + rng() % 0x3ff)};  // subnormal
    case 2:
      return core::float_to_half(0.0f);
    case 3:
      return core::float_to_half(
          -std::ldexp(1.0f + (rng() % 1000) / 1000.0f, -static_cast<int>(rng() % 14)));
    default:
      return core::float_to_half(
          std::ldexp(1.0f + (rng() % 1000) / 1000.0f, -static_cast<int>(rng() % 20)));
  }
}

// Weight blocks: random bytes everywhere (every bit pattern is a valid block) and random scales.
template <class Block>
std::vector<Block> random_weights(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Block> v(n);
  auto* bytes = reinterpret_cast<uint8_t*>(v.data());
  for (size_t i = 0; i < n * sizeof(Block); ++i) bytes[i] = static_cast<uint8_t>(rng());
  for (Block& b : v) {
    b.d = random_scale(rng);
    if constexpr (requires { b.dmin; }) b.dmin = random_scale(rng);
  }
  return v;
}

// Activation blocks: levels anywhere in [-128, 127] (some all at one extreme), their bsums,
// and scales of either sign over a wide range (q8_k's d is negative when its largest element
// is positive).
std::vector<BlockQ8_K> random_activations(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<BlockQ8_K> v(n);
  for (BlockQ8_K& b : v) {
    const int kind = static_cast<int>(rng() % 6);
    for (int e = 0; e < kQK_K; ++e) {
      const int q = kind == 0 ? 127 : kind == 1 ? -128 : static_cast<int>(rng() % 256) - 128;
      b.qs[e] = static_cast<int8_t>(q);
    }
    for (int s = 0; s < kQK_K / 16; ++s) {
      int sum = 0;
      for (int e = 16 * s; e < 16 * s + 16; ++e) sum += b.qs[e];
      b.bsums[s] = static_cast<int16_t>(sum);
    }
    const float mag =
        std::ldexp(1.0f + (rng() % 4096) / 4096.0f, static_cast<int>(rng() % 60) - 30);
    b.d = rng() % 2 ? mag : -mag;
  }
  return v;
}

struct KType {
  Type type;
  size_t block_bytes;
  float (*ref)(const uint8_t* x, const BlockQ8_K* y, int64_t k);
  /// The order of a packed kernel with one weight row per lane, where there is one (its panel
  /// path then sums that way; a type without one keeps ref's order on every path).
  float (*lanes_ref)(const uint8_t* x, const BlockQ8_K* y, int64_t k) = nullptr;

  /// What the packed path (or mul_mat, which takes it where it exists) must give.
  auto packed_ref(int64_t k) const {
    const PackedDot* pd = kernel_set().packed_dot(type, k);
    return lanes_ref != nullptr && pd != nullptr && pd->pack_panel != nullptr ? lanes_ref : ref;
  }
};

template <class Block, float (*F)(const Block*, const BlockQ8_K*, int64_t)>
float ref_bytes(const uint8_t* x, const BlockQ8_K* y, int64_t k) {
  return F(reinterpret_cast<const Block*>(x), y, k);
}

const KType kTypes[] = {
    {Type::kQ4_K, sizeof(BlockQ4_K), ref_bytes<BlockQ4_K, test::ggml_dot_q4_k>,
     ref_bytes<BlockQ4_K, test::lanes_dot_q4_k>},
    {Type::kQ5_K, sizeof(BlockQ5_K), ref_bytes<BlockQ5_K, test::ggml_dot_q5_k>},
    {Type::kQ6_K, sizeof(BlockQ6_K), ref_bytes<BlockQ6_K, test::ggml_dot_q6_k>},
};

std::vector<uint8_t> random_weight_bytes(const KType& t, size_t blocks, uint32_t seed) {
  std::vector<uint8_t> out(blocks * t.block_bytes);
  if (t.type == Type::kQ4_K) {
    auto v = random_weights<BlockQ4_K>(blocks, seed);
    std::memcpy(out.data(), v.data(), out.size());
  } else if (t.type == Type::kQ5_K) {
    auto v = random_weights<BlockQ5_K>(blocks, seed);
    std::memcpy(out.data(), v.data(), out.size());
  } else {
    auto v = random_weights<BlockQ6_K>(blocks, seed);
    std::memcpy(out.data(), v.data(), out.size());
  }
  return out;
}

// The emulation itself, on cases small enough to check by hand.
TEST(KQuantOrder, EmulationMatchesHandComputedCases) {
  // hsum_float_8's order: ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7)). Here 2^30 and
  // -2^30 cancel first, so no 1 is lost: 6. Left to right gives 3, pairs of neighbours 0.
  const float v[8] = {0x1p30f, 1.0f, 1.0f, 1.0f, -0x1p30f, 1.0f, 1.0f, 1.0f};
  EXPECT_EQ(test::ggml_hsum_float_8(v), 6.0f);

  // q6_k: every level 33 (u - 32 = 1), every scale 1, y = 1: each lane sums 32 ones, so the
  // result is 8 * fma(d, 32, 0) with d = y.d * d_w = 0.5 * 2.
  BlockQ6_K x{};
  for (uint8_t& b : x.ql) b = 0x11;
  for (uint8_t& b : x.qh) b = 0xaa;  // top bits 2 for every quarter: 0x20 | 1 = 33
  for (int8_t& s : x.scales) s = 1;
  x.d = core::float_to_half(2.0f);
  BlockQ8_K y{};
  for (int8_t& q : y.qs) q = 1;
  for (int16_t& s : y.bsums) s = 16;
  y.d = 0.5f;
  EXPECT_EQ(test::ggml_dot_q6_k(&x, &y, kQK_K), 256.0f);

  // q4_k: nibbles 1, scales 1, mins 2, y = 1: 8 lanes of 32, mins 4 lanes of 2 * 2 * 32,
  // result d * 256 - dmin' * 512 with d = 1 * 1, dmin' = 1 * 0.25.
  BlockQ4_K x4{};
  for (uint8_t& b : x4.qs) b = 0x11;
  for (int j = 0; j < 4; ++j) {
    x4.scales[j] = 1;         // scales 0-3
    x4.scales[j + 4] = 2;     // mins 0-3
    x4.scales[j + 8] = 0x21;  // scale 4-7 low nibble 1, min 4-7 low nibble 2
  }
  x4.d = core::float_to_half(1.0f);
  x4.dmin = core::float_to_half(0.25f);
  y.d = 1.0f;
  EXPECT_EQ(test::ggml_dot_q4_k(&x4, &y, kQK_K), 256.0f - 128.0f);
}

// Every output of every tile shape mul_mat uses equals the emulation, bit for bit.
TEST(KQuantOrder, EveryTileShapeMatchesLlamaCpp) {
  for (const KType& t : kTypes) {
    const DotKernels& dk = *kernel_set().dot_kernels(t.type);
    for (int64_t k : {256, 512, 768, 1280}) {
      const int64_t nb = k / kQK_K;
      const int rows = dk.max_w + 1, acts = dk.max_a + 1;
      const auto w =
          random_weight_bytes(t, static_cast<size_t>(nb * rows), static_cast<uint32_t>(k));
      const auto a =
          random_activations(static_cast<size_t>(nb * acts), static_cast<uint32_t>(k + 1));
      const size_t ldw = static_cast<size_t>(nb) * t.block_bytes;
      const size_t lda = static_cast<size_t>(nb) * sizeof(BlockQ8_K);
      std::vector<float> ref(static_cast<size_t>(rows * acts));
      for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < acts; ++c) {
          ref[static_cast<size_t>(r * acts + c)] = t.ref(w.data() + r * ldw, a.data() + c * nb, k);
        }
      }
      const auto* ab = reinterpret_cast<const uint8_t*>(a.data());
      for (int nw = 1; nw <= dk.max_w; ++nw) {
        for (int na = 1; na <= dk.max_a; ++na) {
          for (int r0 : {0, rows - nw}) {
            for (int c0 : {0, acts - na}) {
              std::vector<float> out(static_cast<size_t>(nw * na));
              dk.tile(k, w.data() + r0 * ldw, ldw, nw, ab + c0 * lda, lda, na, out.data(), na, 1);
              for (int r = 0; r < nw; ++r) {
                for (int c = 0; c < na; ++c) {
                  const float want = ref[static_cast<size_t>((r0 + r) * acts + c0 + c)];
                  const float got = out[static_cast<size_t>(r * na + c)];
                  ASSERT_TRUE(same_bits(got, want))
                      << core::type_name(t.type) << " k " << k << " tile " << nw << "x" << na
                      << " pair " << r0 + r << "," << c0 + c << ": " << got << " vs " << want;
                }
              }
            }
          }
        }
      }
    }
  }
}

// The packed path (when this build has one for the type) packs f32 activations itself; its
// outputs must equal the emulation on core's q8_k rounding of the same rows.
TEST(KQuantOrder, PackedPathMatchesLlamaCpp) {
  int checked = 0;
  for (const KType& t : kTypes) {
    for (int64_t k : {256, 1024, 2816}) {
      const PackedDot* pd = kernel_set().packed_dot(t.type, k);
      if (pd == nullptr) continue;
      ++checked;
      const int64_t nb = k / kQK_K;
      const auto w = random_weight_bytes(t, static_cast<size_t>(nb * pd->max_w), 7);
      std::mt19937 rng(static_cast<uint32_t>(k));
      std::normal_distribution<float> normal;
      std::vector<float> x(static_cast<size_t>(k * pd->max_a));
      for (size_t i = 0; i < x.size(); ++i)
        x[i] = normal(rng) * std::ldexp(1.0f, static_cast<int>(i / 256 % 40) - 20);
      const size_t a_row = pd->act_row_bytes(k);
      std::vector<uint8_t> a_buf(a_row * static_cast<size_t>(pd->max_a) + 64);
      uint8_t* a = a_buf.data() + (64 - reinterpret_cast<uintptr_t>(a_buf.data()) % 64) % 64;
      std::vector<BlockQ8_K> q(static_cast<size_t>(nb * pd->max_a));
      for (int c = 0; c < pd->max_a; ++c) {
        pd->pack(x.data() + c * k, a + c * a_row, k);
        core::traits(Type::kQ8_K).from_float(x.data() + c * k, q.data() + c * nb, k);
      }
      const size_t ldw = static_cast<size_t>(nb) * t.block_bytes;
      for (int nw = 1; nw <= pd->max_w; ++nw) {
        for (int na = 1; na <= pd->max_a; ++na) {
          std::vector<float> out(static_cast<size_t>(nw * na));
          pd->tile(k, w.data(), ldw, nw, a, a_row, na, out.data(), na, 1);
          for (int r = 0; r < nw; ++r) {
            for (int c = 0; c < na; ++c) {
              const float want = t.packed_ref(k)(w.data() + r * ldw, q.data() + c * nb, k);
              ASSERT_TRUE(same_bits(out[static_cast<size_t>(r * na + c)], want))
                  << core::type_name(t.type) << " k " << k << " tile " << nw << "x" << na;
            }
          }
        }
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no packed K-quant kernels in this build";
}

// mul_mat end to end (activation rounding, chunking, edge tiles, threads): every output of
// a 9 x 11 product equals the emulation, for one row (decode) and for all of them.
TEST(KQuantOrder, MulMatMatchesLlamaCpp) {
  constexpr int64_t kK = 768, kM = 9, kN = 11;
  for (const KType& t : kTypes) {
    for (int64_t n : {int64_t{1}, kN}) {
      for (int threads : {1, 2}) {
        core::Context ctx;
        core::Tensor* w = ctx.new_tensor(t.type, {kK, kM, 1, 1});
        core::Tensor* x = ctx.new_tensor(Type::kF32, {kK, n, 1, 1});
        core::Tensor* out = core::mul_mat(ctx, w, x);
        core::Tensor* outs[] = {out};
        const core::Graph g = core::build_graph(outs);
        test::Placement placement(g);
        const auto wb = random_weight_bytes(t, static_cast<size_t>(kM * kK / kQK_K), 3);
        std::memcpy(w->data, wb.data(), wb.size());
        std::mt19937 rng(4);
        std::normal_distribution<float> normal;
        auto* xf = static_cast<float*>(x->data);
        for (int64_t i = 0; i < kK * n; ++i) xf[i] = normal(rng);
        ThreadPool pool(threads);
        std::vector<uint8_t> scratch;
        ASSERT_TRUE(compute_graph(g, pool, scratch).ok());
        std::vector<BlockQ8_K> q(static_cast<size_t>(kK / kQK_K));
        for (int64_t c = 0; c < n; ++c) {
          core::traits(Type::kQ8_K).from_float(xf + c * kK, q.data(), kK);
          for (int64_t r = 0; r < kM; ++r) {
            const float want = t.packed_ref(kK)(wb.data() + r * w->nb[1], q.data(), kK);
            const float got = static_cast<const float*>(out->data)[c * kM + r];
            ASSERT_TRUE(same_bits(got, want)) << core::type_name(t.type) << " n " << n
                                              << " threads " << threads << " at " << r << "," << c;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace strata::cpu
