// flash_attn: every case against the reference with 1, 2 and 3 threads (same bits for each),
// invariance under thread count, cache padding and token splits, agreement with the unfused
// mul_mat / soft_max / mul_mat chain, and the argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "case_runner.h"
#include "cases_attention.h"
#include "core/context.h"
#include "core/graph.h"
#include "core/ops.h"
#include "cpu/graph_compute.h"
#include "cpu/reference/reference.h"
#include "test_util.h"

namespace strata::cpu {
namespace {

using core::Context;
using core::Tensor;
using core::Type;
using test::AttnOperands;
using test::AttnShape;
using test::Case;
using test::Inputs;

using Outputs = test::CaseOutputs;

// Seeds the case's leafs the same way every time.
Outputs run(const Case& c, int n_threads) {
  return test::run_case(c, n_threads, 11);
}

bool verbose() {
  return std::getenv("STRATA_TEST_VERBOSE") != nullptr;
}

std::vector<Case> cases() {
  std::vector<Case> c;
  test::attention_cases(c);
  return c;
}

class FlashAttnConformance : public ::testing::TestWithParam<Case> {};

TEST_P(FlashAttnConformance, MatchesReferenceAndIsThreadCountInvariant) {
  const Case& c = GetParam();
  const Outputs ref = run(c, 0);
  Outputs first;
  for (int n_threads : {1, 2, 3}) {
    const Outputs got = run(c, n_threads);
    ASSERT_EQ(got.values.size(), ref.values.size());
    const double err = test::relative_error(got.values[0], ref.values[0], c.floor);
    EXPECT_LE(err, c.tol) << n_threads << " threads";
    if (verbose()) std::printf("%-56s threads %d rel err %.3g\n", c.name.c_str(), n_threads, err);
    if (n_threads == 1) {
      first = got;
    } else {
      EXPECT_EQ(got.bytes, first.bytes) << "1 and " << n_threads << " threads differ";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, FlashAttnConformance, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& p) { return p.param.name; });

constexpr Type kKvTypes[] = {Type::kF32, Type::kF16, Type::kBF16, Type::kQ8_0};

// More pairs than threads in every split, and thread counts beyond the table's.
TEST(FlashAttn, BitIdenticalAcrossThreadCounts) {
  const auto build = [](Context& ctx, Inputs& in) {
    std::vector<Tensor*> outs;
    for (Type t : kKvTypes) {
      const AttnShape s{64, 8, 2, 13, 333};
      const AttnOperands op = test::attn_operands(ctx, in, s, t, t, true, true, s.n_kv);
      outs.push_back(core::flash_attn(ctx, op.q, op.k, op.v, op.mask, 0.5f));
    }
    return outs;
  };
  const Case c{"invariance", build};
  const Outputs base = run(c, 1);
  for (int n : {2, 4, 5, 8}) EXPECT_EQ(run(c, n).bytes, base.bytes) << n << " threads";
}

// Reading more cells of the cache than the tokens see (hidden by the mask) changes no bit:
// hidden cells are skipped and blocks are anchored at cell 0.
TEST(FlashAttn, HiddenCacheCellsChangeNoBit) {
  for (Type t : kKvTypes) {
    const Case c{"padding_" + test::tname(t), [t](Context& ctx, Inputs& in) {
                   const AttnShape s{64, 4, 2, 5, 200};
                   const AttnOperands op = test::attn_operands(ctx, in, s, t, t, true, false, 300);
                   Tensor* mask = test::f32(ctx, {300, 5, 1, 1});
                   in.f32[mask] = test::causal_mask(200, 5, 300, 5);
                   Tensor* k_wide = core::view(ctx, op.k->view_src, {64, 300, 2, 1}, op.k->nb, 0);
                   Tensor* v_wide = core::view(ctx, op.v->view_src, {64, 300, 2, 1}, op.v->nb, 0);
                   return std::vector{core::flash_attn(ctx, op.q, op.k, op.v, mask, 0.5f),
                                      core::flash_attn(ctx, op.q, k_wide, v_wide, mask, 0.5f)};
                 }};
    const Outputs got = run(c, 2);
    ASSERT_EQ(got.bytes.size(), 2u);
    EXPECT_EQ(got.bytes[0], got.bytes[1]) << c.name;
  }
}

// Tokens computed in separate calls (micro-batches) give the bits of one call over all of them:
// on a short cache, and on one where every token's cells span several segments, which one
// token's call deals to the threads and a prompt's call walks in order.
TEST(FlashAttn, SplittingTokensKeepsBits) {
  constexpr int64_t kSplits[][2] = {{0, 1}, {1, 6}, {7, 25}, {32, 1}};
  for (const int64_t n_kv : {90, 1100}) {
    for (Type t : kKvTypes) {
      const Case c{
          "split_" + test::tname(t) + "_kv" + std::to_string(n_kv),
          [t, n_kv, &kSplits](Context& ctx, Inputs& in) {
            const AttnShape s{64, 4, 2, 33, n_kv};
            const AttnOperands op = test::attn_operands(ctx, in, s, t, t, true, true, n_kv);
            std::vector<Tensor*> outs = {core::flash_attn(ctx, op.q, op.k, op.v, op.mask, 0.5f)};
            Tensor* q_rows = op.q->src[0];  // [hd, n_head, n_tokens]
            for (const auto& [first, n] : kSplits) {
              Tensor* qs = core::view(ctx, q_rows, {64, 4, n, 1}, q_rows->nb,
                                      static_cast<size_t>(first) * q_rows->nb[2]);
              Tensor* ms = core::view(ctx, op.mask, {op.mask->ne[0], n, 1, 1}, op.mask->nb,
                                      static_cast<size_t>(first) * op.mask->nb[1]);
              outs.push_back(core::flash_attn(ctx, core::permute(ctx, qs, {0, 2, 1, 3}), op.k, op.v,
                                              ms, 0.5f));
            }
            return outs;
          }};
      for (int n_threads : {1, 3}) {
        const Outputs got = run(c, n_threads);
        ASSERT_EQ(got.values.size(), 1 + std::size(kSplits));
        const size_t per_token = 64 * 4;
        for (size_t i = 0; i < std::size(kSplits); ++i) {
          const auto first = static_cast<size_t>(kSplits[i][0]);
          const std::vector<float> expect(
              got.values[0].begin() + static_cast<std::ptrdiff_t>(first * per_token),
              got.values[0].begin() +
                  static_cast<std::ptrdiff_t>(first * per_token + got.values[i + 1].size()));
          EXPECT_EQ(got.values[i + 1], expect)
              << c.name << " split " << i << ", " << n_threads << " threads";
        }
      }
    }
  }
}

// A token whose cells lie in every other page of the cache (another sequence's pages between,
// hidden by its mask) gets the bits it gets from the same cells packed together: its segments
// are counted in the blocks it sees. 35 blocks (three segments), the last one partly filled.
TEST(FlashAttn, CellsSpreadOverPagesKeepBits) {
  constexpr int64_t kHd = 64, kHeadsKv = 2, kPacked = 1100, kBlock = 32;
  constexpr int64_t kSpread = 2 * 1120;
  for (Type t : kKvTypes) {
    const Case c{"pages_" + test::tname(t), [t](Context& ctx, Inputs& in) {
                   const int64_t row = kHd * kHeadsKv;
                   std::vector<float> packed_k = test::uniform(kPacked * row, -1.0f, 1.0f, 5);
                   std::vector<float> packed_v = test::uniform(kPacked * row, -1.0f, 1.0f, 6);
                   // The spread cache: other values everywhere, then cell c of the packed
                   // one in block 2 * (c / 32) + 1.
                   std::vector<float> spread_k = test::uniform(kSpread * row, -1.0f, 1.0f, 7);
                   std::vector<float> spread_v = test::uniform(kSpread * row, -1.0f, 1.0f, 8);
                   std::vector<float> mask(kSpread, -INFINITY);
                   for (int64_t cell = 0; cell < kPacked; ++cell) {
                     const int64_t at = (2 * (cell / kBlock) + 1) * kBlock + cell % kBlock;
                     std::copy_n(packed_k.begin() + cell * row, row, spread_k.begin() + at * row);
                     std::copy_n(packed_v.begin() + cell * row, row, spread_v.begin() + at * row);
                     mask[static_cast<size_t>(at)] = 0.0f;
                   }
                   const auto cache = [&](const std::vector<float>& values, int64_t cells) {
                     Tensor* leaf = test::leaf(ctx, t, {row, cells, 1, 1});
                     in.f32[leaf] = values;
                     return core::view(ctx, leaf, {kHd, cells, kHeadsKv, 1},
                                       {leaf->nb[0], leaf->nb[1], core::row_size(t, kHd),
                                        leaf->nb[1] * static_cast<size_t>(cells)},
                                       0);
                   };
                   Tensor* q = test::f32(ctx, {kHd, 1, 8, 1});
                   Tensor* m = test::f32(ctx, {kSpread, 1, 1, 1});
                   in.f32[m] = mask;
                   return std::vector{core::flash_attn(ctx, q, cache(packed_k, kPacked),
                                                       cache(packed_v, kPacked), nullptr, 0.5f),
                                      core::flash_attn(ctx, q, cache(spread_k, kSpread),
                                                       cache(spread_v, kSpread), m, 0.5f)};
                 }};
    for (int n_threads : {1, 2, 3}) {
      const Outputs got = run(c, n_threads);
      ASSERT_EQ(got.bytes.size(), 2u);
      EXPECT_EQ(got.bytes[0], got.bytes[1]) << c.name << ", " << n_threads << " threads";
    }
  }
}

// On a long prompt the fused op and the unfused chain agree closely: with an F32 cache nothing
// is rounded differently except the order of the f32 sums. With an F16 cache the unfused chain
// also rounds every probability to f16 before the product with V (2^-11 relative each), which
// the fused op does not, so there the two differ by more.
TEST(FlashAttn, MatchesUnfusedChainOnALongPrompt) {
  for (Type t : {Type::kF32, Type::kF16}) {
    const Case c{"fused_vs_unfused_" + test::tname(t), [t](Context& ctx, Inputs& in) {
                   const AttnShape s{64, 8, 2, 300, 300};
                   const AttnOperands op = test::attn_operands(ctx, in, s, t, t, true, true, 320);
                   const float scale = 0.125f;
                   return std::vector{core::flash_attn(ctx, op.q, op.k, op.v, op.mask, scale),
                                      test::unfused_attention(ctx, op, scale)};
                 }};
    const Outputs got = run(c, 2);
    ASSERT_EQ(got.values.size(), 2u);
    const double err = test::relative_error(got.values[0], got.values[1], 0.0);
    if (verbose()) std::printf("%s: rel diff %.3g\n", c.name.c_str(), err);
    EXPECT_LE(err, t == Type::kF32 ? 1e-4 : 1e-3) << c.name;
  }
}

TEST(FlashAttn, BadArgumentsAreConstructionErrors) {
  const auto fails = [](auto&& build) {
    Context ctx;
    build(ctx);
    return !ctx.ok() && ctx.status().message().find("flash_attn") != std::string::npos;
  };
  const auto q = [](Context& ctx) { return test::f32(ctx, {64, 3, 8, 1}); };
  const auto kv = [](Context& ctx, Type t, int64_t heads) {
    return test::leaf(ctx, t, {64, 10, heads, 1});
  };
  EXPECT_TRUE(fails([&](Context& ctx) {
    core::flash_attn(ctx, test::leaf(ctx, Type::kF16, {64, 3, 8, 1}), kv(ctx, Type::kF16, 2),
                     kv(ctx, Type::kF16, 2), nullptr, 1.0f);
  }));
  EXPECT_TRUE(fails([&](Context& ctx) {
    core::flash_attn(ctx, q(ctx), kv(ctx, Type::kQ4_0, 2), kv(ctx, Type::kF16, 2), nullptr, 1.0f);
  }));
  EXPECT_TRUE(fails([&](Context& ctx) {
    core::flash_attn(ctx, q(ctx), kv(ctx, Type::kF16, 3), kv(ctx, Type::kF16, 3), nullptr, 1.0f);
  }));
  EXPECT_TRUE(fails([&](Context& ctx) {
    core::flash_attn(ctx, q(ctx), kv(ctx, Type::kF16, 2), kv(ctx, Type::kF16, 4), nullptr, 1.0f);
  }));
  EXPECT_TRUE(fails([&](Context& ctx) {
    core::flash_attn(ctx, q(ctx), kv(ctx, Type::kF16, 2), kv(ctx, Type::kF16, 2),
                     test::f32(ctx, {9, 3, 1, 1}), 1.0f);
  }));
  EXPECT_TRUE(fails([&](Context& ctx) {
    core::flash_attn(ctx, q(ctx), kv(ctx, Type::kF16, 2), kv(ctx, Type::kF16, 2), nullptr, 1.0f,
                     -30.0f);
  }));
  Context ok;
  Tensor* out = core::flash_attn(ok, q(ok), kv(ok, Type::kQ8_0, 2), kv(ok, Type::kF16, 2),
                                 test::f32(ok, {10, 3, 1, 1}), 1.0f);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(out->ne, (std::array<int64_t, 4>{64, 8, 3, 1}));
}

}  // namespace
}  // namespace strata::cpu
