// The f32, f16 and bf16 dot products round exactly as llama.cpp's x86 AVX-512 build does. The
// scalar emulation below is written from that build's arithmetic (its prompt GEMM for k a
// multiple of 16, or of 32 for bf16 with AVX-512 BF16; its vector dot otherwise, including how
// GCC compiled the f32 remainder) and every tile shape of the kernels must give its bits, for
// sizes that exercise each branch. The golden-logit tests check the same on whole models; this
// one covers the sizes those models do not have, and transposed weights.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "case_runner.h"
#include "core/context.h"
#include "core/float16.h"
#include "core/ops.h"
#include "cpu/kernel_sets.h"

namespace strata::cpu {
namespace {

using core::Type;

// The 512-bit lane sum: upper half onto lower, 128-bit halves, then (0+2) + (1+3).
float lane_tree(const float* lane) {
  float t8[8], t4[4];
  for (int i = 0; i < 8; ++i) t8[i] = lane[i + 8] + lane[i];
  for (int i = 0; i < 4; ++i) t4[i] = t8[i + 4] + t8[i];
  return (t4[0] + t4[2]) + (t4[1] + t4[3]);
}

// Prompt GEMM (k % 16 == 0): element j into lane j % 16 by fused multiply-adds.
float gemm_order(const std::vector<float>& x, const std::vector<float>& y) {
  float lane[16] = {};
  for (size_t j = 0; j < x.size(); ++j) lane[j % 16] = std::fma(x[j], y[j], lane[j % 16]);
  return lane_tree(lane);
}

// BF16 GEMM with vdpbf16ps (k % 32 == 0): per 32-element step, lane l adds the product of
// elements 2l + 1, then of 2l (each product exact in f32, each sum rounded).
float gemm_bf16_pairs_order(const std::vector<float>& x, const std::vector<float>& y) {
  float lane[16] = {};
  for (size_t s = 0; s < x.size(); s += 32) {
    for (int l = 0; l < 16; ++l) {
      lane[l] += x[s + 2 * l + 1] * y[s + 2 * l + 1];
      lane[l] += x[s + 2 * l] * y[s + 2 * l];
    }
  }
  return lane_tree(lane);
}

// Vector dot, f32 and f16: four 16-lane accumulators over 64-element steps, added (0+2) + (1+3),
// the lane sum, then the rest.
float four_accumulators(const std::vector<float>& x, const std::vector<float>& y, size_t np) {
  float acc[4][16] = {};
  for (size_t i = 0; i < np; i += 64) {
    for (int a = 0; a < 4; ++a) {
      for (int l = 0; l < 16; ++l) {
        const size_t e = i + 16 * a + l;
        acc[a][l] = std::fma(x[e], y[e], acc[a][l]);
      }
    }
  }
  float lane[16];
  for (int l = 0; l < 16; ++l) lane[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
  return lane_tree(lane);
}

// f32 remainder as GCC compiled it: products rounded and added in order, except the last
// (k - np) % 8 elements, which are fused.
float vector_dot_f32_order(const std::vector<float>& x, const std::vector<float>& y) {
  const size_t k = x.size();
  const size_t np = k & ~size_t{63};
  float sum = four_accumulators(x, y, np);
  const size_t fused_from = np + ((k - np) & ~size_t{7});
  for (size_t i = np; i < k; ++i) {
    if (i < fused_from) {
      const float p = x[i] * y[i];
      sum += p;
    } else {
      sum = std::fma(x[i], y[i], sum);
    }
  }
  return sum;
}

// f16 remainder: exact products added in double.
float vector_dot_f16_order(const std::vector<float>& x, const std::vector<float>& y) {
  const size_t k = x.size();
  const size_t np = k & ~size_t{63};
  double sum = four_accumulators(x, y, np);
  for (size_t i = np; i < k; ++i) sum += static_cast<double>(x[i] * y[i]);
  return static_cast<float>(sum);
}

// bf16 vector dot: two accumulators, each lane-summed and added in double, then the rest in
// double. With AVX-512 BF16 they take 64-element steps of vdpbf16ps pairs, else 32-element
// steps of 16 fused lanes each.
float vector_dot_bf16_order(const std::vector<float>& x, const std::vector<float>& y) {
  const size_t k = x.size();
  float acc[2][16] = {};
  size_t np = 0;
  if (kernel_set().bf16_pairs) {
    np = k & ~size_t{63};
    for (size_t s = 0; s < np; s += 64) {
      for (int h = 0; h < 2; ++h) {
        const size_t b = s + 32 * h;
        for (int l = 0; l < 16; ++l) {
          acc[h][l] += x[b + 2 * l + 1] * y[b + 2 * l + 1];
          acc[h][l] += x[b + 2 * l] * y[b + 2 * l];
        }
      }
    }
  } else {
    np = k & ~size_t{31};
    for (size_t s = 0; s < np; s += 32) {
      for (int h = 0; h < 2; ++h) {
        for (int l = 0; l < 16; ++l) {
          const size_t e = s + 16 * h + l;
          acc[h][l] = std::fma(x[e], y[e], acc[h][l]);
        }
      }
    }
  }
  double sum = 0.0;
  sum += lane_tree(acc[0]);
  sum += lane_tree(acc[1]);
  for (size_t i = np; i < k; ++i) sum += static_cast<double>(x[i] * y[i]);
  return static_cast<float>(sum);
}

bool bf16_pairs() {
  return kernel_set().bf16_pairs;
}

float expected(Type t, const std::vector<float>& x, const std::vector<float>& y) {
  const size_t k = x.size();
  if (t == Type::kBF16 && bf16_pairs()) {
    return k % 32 == 0 ? gemm_bf16_pairs_order(x, y) : vector_dot_bf16_order(x, y);
  }
  if (k % 16 == 0) return gemm_order(x, y);
  if (t == Type::kF32) return vector_dot_f32_order(x, y);
  if (t == Type::kF16) return vector_dot_f16_order(x, y);
  return vector_dot_bf16_order(x, y);
}

// Rows of `t`: random values of mixed magnitudes (so sums round often), none subnormal.
struct Rows {
  std::vector<float> values;  // as f32, exactly the stored values
  std::vector<uint8_t> bytes;
};

Rows random_rows(Type t, int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  Rows r;
  r.values.resize(static_cast<size_t>(n));
  r.bytes.resize(static_cast<size_t>(n) * (t == Type::kF32 ? 4 : 2));
  for (int64_t i = 0; i < n; ++i) {
    const float v = std::ldexp(mant(rng), -static_cast<int>(rng() % 6));
    float stored = v;
    uint8_t* dst = r.bytes.data() + i * (t == Type::kF32 ? 4 : 2);
    if (t == Type::kF32) {
      std::memcpy(dst, &stored, 4);
    } else if (t == Type::kF16) {
      const core::Half h = core::float_to_half(v);
      stored = core::half_to_float(h);
      std::memcpy(dst, &h, 2);
    } else {
      const core::BFloat16 h = core::float_to_bf16(v);
      stored = core::bf16_to_float(h);
      std::memcpy(dst, &h, 2);
    }
    r.values[static_cast<size_t>(i)] = stored;
  }
  return r;
}

bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

class FloatDotOrder : public ::testing::TestWithParam<Type> {};

TEST_P(FloatDotOrder, EveryTileShapeGivesTheEmulatedBits) {
  const Type t = GetParam();
  const DotKernels* kern = kernel_set().dot_kernels(t);
  ASSERT_NE(kern, nullptr);
  std::mt19937 rng(1234);
  const int64_t sizes[] = {1,  7,  8,  9,   15,  16,  24,  31,  32,  40,  48,  63,  64,
                           65, 72, 96, 100, 127, 128, 136, 172, 176, 200, 256, 264, 333};
  const size_t esize = t == Type::kF32 ? 4 : 2;
  for (const int64_t k : sizes) {
    const int nw = kern->max_w;
    const int na = kern->max_a;
    Rows w = random_rows(t, k * nw, rng);
    Rows a = random_rows(t, k * na, rng);
    const size_t row_bytes = static_cast<size_t>(k) * esize;
    for (const auto& [tw, ta] : {std::pair{nw, na}, std::pair{1, 1}, std::pair{nw, 1}}) {
      std::vector<float> out(static_cast<size_t>(tw * ta), NAN);
      kern->tile(k, w.bytes.data(), row_bytes, tw, a.bytes.data(), row_bytes, ta, out.data(), ta,
                 1);
      for (int r = 0; r < tw; ++r) {
        for (int c = 0; c < ta; ++c) {
          const auto wr =
              std::vector<float>(w.values.begin() + r * k, w.values.begin() + (r + 1) * k);
          const auto ar =
              std::vector<float>(a.values.begin() + c * k, a.values.begin() + (c + 1) * k);
          const float want = expected(t, wr, ar);
          const float got = out[static_cast<size_t>(r * ta + c)];
          EXPECT_TRUE(same_bits(got, want))
              << core::type_name(t) << " k=" << k << " tile " << tw << "x" << ta << " pair (" << r
              << "," << c << "): got " << got << " want " << want;
        }
      }
    }
  }
}

std::string type_param_name(const ::testing::TestParamInfo<Type>& p) {
  return std::string(core::type_name(p.param));
}

INSTANTIATE_TEST_SUITE_P(Types, FloatDotOrder,
                         ::testing::Values(Type::kF32, Type::kF16, Type::kBF16), type_param_name);

// Decode's attention multiplies by V through a transposed view; mul_mat walks such a matrix in
// address order (dot_transposed.cpp) rather than gathering it, and must give exactly the bits of
// the dense rows: every float type, row counts with and without a vector tail, cell counts
// within one chunk of the walk and over several (528: two chunks and a part), 1-4 activation
// rows (the decode sizes), broadcast batches, on 1 and 2 threads.
TEST(TransposedWeights, GiveTheBitsOfTheDenseRows) {
  for (const Type t : {Type::kF32, Type::kF16, Type::kBF16}) {
    for (const int64_t k : {32, 176, 528}) {
      for (const int64_t m : {8, 12, 24, 44, 64}) {
        // One or two V heads under 6 or 11 query heads each: one row per head takes several
        // heads per walk (up to 8), split between threads when there are fewer V heads.
        for (const auto& [n, v_heads, per_head] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 6},
                                                   {1, 2, 6},
                                                   {1, 1, 11},
                                                   {2, 2, 6},
                                                   {4, 1, 6}}) {
          test::Case c;
          c.name = "transposed";
          c.build = [=](core::Context& ctx, test::Inputs&) {
            core::Tensor* stored = ctx.new_tensor(t, {m, k, v_heads, 1});  // V: [hd, cells]
            core::Tensor* x = ctx.new_tensor(Type::kF32, {k, n, per_head * v_heads, 1});
            core::Tensor* wt = core::transpose(ctx, stored);
            return std::vector<core::Tensor*>{core::mul_mat(ctx, wt, x),
                                              core::mul_mat(ctx, core::cont(ctx, wt), x)};
          };
          for (const int threads : {1, 2}) {
            const test::CaseOutputs o = test::run_case(c, threads, 5);
            ASSERT_EQ(o.values.size(), 2u);
            EXPECT_TRUE(o.values[0] == o.values[1])
                << core::type_name(t) << " k=" << k << " m=" << m << " n=" << n
                << " per_head=" << per_head << " threads=" << threads;
          }
        }
      }
    }
  }
}

// Prefill multiplies by V through the same view with many activation rows; mul_mat gathers
// the strided rows 64 at a time, once for all the chunks that read them. Row counts within one
// gather and over several (a part included), activation rows over several chunks, two V heads
// under three query heads each (consecutive batches share their rows), 1-3 threads.
TEST(TransposedWeights, GatheredForPrefillGiveTheBitsOfTheDenseRows) {
  for (const Type t : {Type::kF32, Type::kF16, Type::kBF16}) {
    for (const int64_t m : {24, 64, 136}) {
      for (const int64_t n : {9, 130}) {
        constexpr int64_t k = 96, v_heads = 2, per_head = 3;
        test::Case c;
        c.name = "transposed_prefill";
        c.build = [=](core::Context& ctx, test::Inputs&) {
          core::Tensor* stored = ctx.new_tensor(t, {m, k, v_heads, 1});
          core::Tensor* x = ctx.new_tensor(Type::kF32, {k, n, per_head * v_heads, 1});
          core::Tensor* wt = core::transpose(ctx, stored);
          return std::vector<core::Tensor*>{core::mul_mat(ctx, wt, x),
                                            core::mul_mat(ctx, core::cont(ctx, wt), x)};
        };
        for (const int threads : {1, 2, 3}) {
          const test::CaseOutputs o = test::run_case(c, threads, 5);
          ASSERT_EQ(o.values.size(), 2u);
          EXPECT_TRUE(o.values[0] == o.values[1])
              << core::type_name(t) << " m=" << m << " n=" << n << " threads=" << threads;
        }
      }
    }
  }
}

// Decode under grouped-query attention: one row per query head, several heads per weight batch.
// mul_mat takes a batch's heads as the rows of one tile walk; each output must keep the bits it
// has when the heads' rows are walked one batch at a time (here: the same rows with a second
// row beside them, which the fold does not apply to).
//
// Short rows (64: an attention head) under 3 or 8 heads per batch take f16's kernel for many
// short rows (dot_cells_f16.cpp), with row counts that leave a partial register of rows.
TEST(GroupedQueryRows, GiveTheBitsOfOneBatchAtATime) {
  struct Shape {
    int64_t k, m, heads;
  };
  for (const Type t :
       {Type::kF32, Type::kF16, Type::kBF16, Type::kQ8_0, Type::kQ4_0, Type::kQ4_K, Type::kQ6_K}) {
    for (const Shape shape : {Shape{256, 37, 8}, Shape{64, 53, 8}, Shape{64, 21, 6}}) {
      if (shape.k % core::block_size(t) != 0) continue;
      const int64_t k = shape.k, m = shape.m, heads = shape.heads, groups = 2;
      test::Case c;
      c.name = "grouped_query";
      c.build = [=](core::Context& ctx, test::Inputs&) {
        core::Tensor* w = ctx.new_tensor(t, {k, m, groups, 1});
        core::Tensor* two = ctx.new_tensor(Type::kF32, {k, 2, heads, 1});
        core::Tensor* one = core::view(ctx, two, {k, 1, heads, 1},
                                       {two->nb[0], two->nb[1], two->nb[2], two->nb[3]}, 0);
        core::Tensor* folded = core::mul_mat(ctx, w, one);  // [m, 1, heads]
        core::Tensor* both = core::mul_mat(ctx, w, two);    // [m, 2, heads]
        core::Tensor* first = core::view(ctx, both, {m, 1, heads, 1},
                                         {both->nb[0], both->nb[1], both->nb[2], both->nb[3]}, 0);
        return std::vector<core::Tensor*>{folded, core::cont(ctx, first)};
      };
      for (const int threads : {1, 2}) {
        const test::CaseOutputs o = test::run_case(c, threads, 3);
        ASSERT_EQ(o.values.size(), 2u);
        EXPECT_TRUE(o.values[0] == o.values[1])
            << core::type_name(t) << " k=" << k << " heads=" << heads << " threads=" << threads;
      }
    }
  }
}

}  // namespace
}  // namespace strata::cpu
