// mul_mat skips work whose result cannot differ (see mul_mat.cpp): scores a mask hides, and
// activation steps past a row's last nonzero one. Each skip must leave every output's bits as
// the whole computation gives them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "case_runner.h"
#include "conformance_cases.h"
#include "core/ops.h"

namespace strata::cpu {
namespace {

using core::Tensor;
using core::Type;

enum class MaskKind { kCausal, kScattered, kTwoSequences };

// A mask [width, height] of `kind` for nq queries over nk keys.
std::vector<float> make_mask(MaskKind kind, int64_t nk, int64_t nq, int64_t width, int64_t height,
                             uint64_t seed) {
  if (kind == MaskKind::kCausal) return test::causal_mask(nk, nq, width, height);
  std::vector<float> m(static_cast<size_t>(width * height), -INFINITY);
  std::mt19937_64 rng(seed);
  for (int64_t q = 0; q < nq; ++q) {
    for (int64_t c = 0; c < nk; ++c) {
      bool seen = false;
      if (kind == MaskKind::kScattered) {
        // Some rows hide everything, others a random third of their cells.
        seen = q % 5 != 3 && rng() % 3 != 0;
      } else {
        // Cells and queries of two sequences interleaved, each causal within its own.
        const int64_t pos = nk - nq + q;
        seen = c % 2 == q % 2 && c <= pos;
      }
      if (seen) m[static_cast<size_t>(q * width + c)] = 0.0f;
    }
  }
  return m;
}

std::string mask_name(MaskKind kind) {
  switch (kind) {
    case MaskKind::kCausal:
      return "causal";
    case MaskKind::kScattered:
      return "scattered";
    case MaskKind::kTwoSequences:
      return "two_sequences";
  }
  return "?";
}

// Attention scores with a mask against the same scores without: hidden outputs are -inf, the
// others the same bits. Head sizes take f16's short-row panel (64) and its long tiles (256);
// one query row takes decode's folded heads; 1-3 threads split the tiles differently.
TEST(MaskedScores, HiddenOnesAreMinusInfinityAndTheRestKeepTheirBits) {
  for (const Type t : {Type::kF32, Type::kF16, Type::kBF16, Type::kQ8_0}) {
    for (const int64_t hd : {64, 256}) {
      for (const int64_t n_kv : {40, 200}) {
        for (const int64_t n_tokens : {1, 7, 70}) {
          if (n_tokens > n_kv) continue;
          for (const MaskKind kind :
               {MaskKind::kCausal, MaskKind::kScattered, MaskKind::kTwoSequences}) {
            constexpr int64_t kv_heads = 2, per_head = 4;
            test::Case c;
            c.name = "masked_scores";
            c.build = [=](core::Context& ctx, test::Inputs& in) {
              Tensor* k = ctx.new_tensor(t, {hd, n_kv, kv_heads, 1});
              Tensor* q = ctx.new_tensor(Type::kF32, {hd, n_tokens, kv_heads * per_head, 1});
              Tensor* mask = ctx.new_tensor(Type::kF32, {n_kv + 3, n_tokens + 2, 1, 1});
              in.f32[mask] = make_mask(kind, n_kv, n_tokens, n_kv + 3, n_tokens + 2, 7);
              return std::vector<Tensor*>{core::mul_mat(ctx, k, q, mask), core::mul_mat(ctx, k, q)};
            };
            for (const int threads : {1, 2, 3}) {
              const test::CaseOutputs o = test::run_case(c, threads, 11);
              ASSERT_EQ(o.values.size(), 2u);
              const std::vector<float>& masked = o.values[0];
              const std::vector<float>& whole = o.values[1];
              const std::vector<float> mask =
                  make_mask(kind, n_kv, n_tokens, n_kv + 3, n_tokens + 2, 7);
              const std::string where =
                  std::string(core::type_name(t)) + " hd=" + std::to_string(hd) +
                  " n_kv=" + std::to_string(n_kv) + " tokens=" + std::to_string(n_tokens) + " " +
                  mask_name(kind) + " threads=" + std::to_string(threads);
              ASSERT_EQ(masked.size(), whole.size()) << where;
              int64_t hidden = 0, wrong = 0;
              for (size_t i = 0; i < masked.size(); ++i) {
                const auto cell = static_cast<int64_t>(i) % n_kv;
                const auto token = static_cast<int64_t>(i) / n_kv % n_tokens;
                const bool hides =
                    mask[static_cast<size_t>(token * (n_kv + 3) + cell)] == -INFINITY;
                hidden += hides;
                const float want = hides ? -INFINITY : whole[i];
                wrong += std::memcmp(&masked[i], &want, sizeof want) != 0;
              }
              EXPECT_EQ(wrong, 0) << where;
              // A decode row at the end of a causal cache sees every cell.
              if (kind != MaskKind::kCausal || n_tokens > 1) {
                EXPECT_GT(hidden, 0) << where;
              }
            }
          }
        }
      }
    }
  }
}

// A masked prompt's attention, end to end, against the unmasked scores (the graph the engine
// built before): the softmax's probabilities, and so their product with V, are the same bits.
TEST(MaskedScores, LeaveTheAttentionOutputsBitForBit) {
  for (const Type t : {Type::kF32, Type::kF16, Type::kBF16}) {
    for (const MaskKind kind : {MaskKind::kCausal, MaskKind::kTwoSequences}) {
      constexpr int64_t hd = 64, n_kv = 96, n_tokens = 80, kv_heads = 2, per_head = 2;
      test::Case c;
      c.name = "masked_attention";
      c.build = [=](core::Context& ctx, test::Inputs& in) {
        Tensor* k = ctx.new_tensor(t, {hd, n_kv, kv_heads, 1});
        Tensor* v = ctx.new_tensor(t, {hd, n_kv, kv_heads, 1});
        Tensor* q = ctx.new_tensor(Type::kF32, {hd, n_tokens, kv_heads * per_head, 1});
        Tensor* mask = ctx.new_tensor(Type::kF32, {n_kv, n_tokens, 1, 1});
        in.f32[mask] = make_mask(kind, n_kv, n_tokens, n_kv, n_tokens, 3);
        Tensor* vt = core::transpose(ctx, v);
        std::vector<Tensor*> outs;
        for (Tensor* scores_mask : {mask, static_cast<Tensor*>(nullptr)}) {
          Tensor* kq = core::soft_max(ctx, core::mul_mat(ctx, k, q, scores_mask), mask, 0.125f);
          outs.push_back(core::mul_mat(ctx, vt, kq));
        }
        return outs;
      };
      for (const int threads : {1, 2, 3}) {
        const test::CaseOutputs o = test::run_case(c, threads, 5);
        ASSERT_EQ(o.values.size(), 2u);
        EXPECT_TRUE(o.bytes[0] == o.bytes[1])
            << core::type_name(t) << " " << mask_name(kind) << " threads=" << threads;
      }
    }
  }
}

// Activation rows that end in zeros (attention's probabilities past a prompt row's position):
// a tile stops after its rows' last nonzero step. Every output must keep the bits of the whole
// row, which a product of one row computes (fewer activation rows than threads never stop
// early). Weights as the V cache's transposed view (gathered) and as dense rows.
TEST(ZeroTails, StoppingAfterTheLastNonzeroStepKeepsTheBits) {
  for (const Type t : {Type::kF32, Type::kF16, Type::kBF16}) {
    for (const int64_t k : {64, 200, 512}) {
      for (const bool transposed : {true, false}) {
        constexpr int64_t m = 40, n = 13, heads = 2;
        std::vector<float> x(static_cast<size_t>(k * n * heads));
        std::mt19937_64 rng(static_cast<uint64_t>(k) * 31 + (transposed ? 1 : 0));
        std::uniform_real_distribution<float> value(-1.0f, 1.0f);
        for (int64_t r = 0; r < n * heads; ++r) {
          // Extents: none, whole, a step's multiple, and uneven ones.
          const int64_t extent = r == 0 ? 0 : r == 1 ? k : r == 2 ? k / 2 / 16 * 16 : rng() % k;
          for (int64_t i = 0; i < k; ++i) {
            x[static_cast<size_t>(r * k + i)] = i < extent ? value(rng) : 0.0f;
          }
        }
        test::Case c;
        c.name = "zero_tails";
        c.build = [=](core::Context& ctx, test::Inputs& in) {
          Tensor* w = transposed ? core::transpose(ctx, ctx.new_tensor(t, {m, k, heads, 1}))
                                 : ctx.new_tensor(t, {k, m, heads, 1});
          Tensor* a = ctx.new_tensor(Type::kF32, {k, n, heads, 1});
          in.f32[a] = x;
          std::vector<Tensor*> outs{core::mul_mat(ctx, w, a)};
          for (int64_t h = 0; h < heads; ++h) {
            Tensor* wh = core::view(ctx, w, {w->ne[0], w->ne[1], 1, 1}, w->nb,
                                    static_cast<size_t>(h) * w->nb[2]);
            for (int64_t r = 0; r < n; ++r) {
              Tensor* row = core::view(ctx, a, {k, 1, 1, 1}, a->nb,
                                       static_cast<size_t>(h) * a->nb[2] + r * a->nb[1]);
              outs.push_back(core::mul_mat(ctx, wh, row));
            }
          }
          return outs;
        };
        for (const int threads : {2, 3}) {
          const test::CaseOutputs o = test::run_case(c, threads, 9);
          ASSERT_EQ(o.values.size(), static_cast<size_t>(1 + n * heads));
          int64_t wrong = 0;
          for (int64_t r = 0; r < n * heads; ++r) {
            const std::vector<float>& one = o.values[static_cast<size_t>(1 + r)];
            for (int64_t i = 0; i < m; ++i) {
              const float got = o.values[0][static_cast<size_t>(r * m + i)];
              wrong += std::memcmp(&got, &one[static_cast<size_t>(i)], sizeof got) != 0;
            }
          }
          EXPECT_EQ(wrong, 0) << core::type_name(t) << " k=" << k
                              << (transposed ? " transposed" : " dense") << " threads=" << threads;
        }
      }
    }
  }
}

}  // namespace
}  // namespace strata::cpu
