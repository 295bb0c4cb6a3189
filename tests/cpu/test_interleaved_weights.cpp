// Weights regrouped at load (q4_0x16, q4_kx16, q8_0x16): the regrouping is lossless, mul_mat over
// them gives the bits of mul_mat over the plain rows on every path (decode, small batches,
// prefill's panel) and thread count, and the host copies only weights the running kernel set
// reads.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/context.h"
#include "core/graph.h"
#include "core/ops.h"
#include "core/quants/interleave.h"
#include "cpu/graph_compute.h"
#include "cpu/kernel_sets.h"
#include "cpu/weight_forms.h"
#include "test_util.h"

namespace strata::cpu {
namespace {

using core::Context;
using core::Tensor;
using core::Type;

constexpr Type kGroupedTypes[] = {Type::kQ4_0x16, Type::kQ4_Kx16, Type::kQ8_0x16};

// Rows of `type` quantized from random values.
std::vector<uint8_t> random_rows(Type type, int64_t rows, int64_t k, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(rows * k));
  const std::vector<int32_t> r = test::random_ints(rows * k, -1000, 1000, seed);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(r[i]) / 300.0f;
  std::vector<uint8_t> q(core::row_size(type, k) * static_cast<size_t>(rows));
  core::traits(type).from_float(v.data(), q.data(), rows * k);
  return q;
}

TEST(InterleaveRows, RoundTripAndKeepEachGroupInItsRowsBytes) {
  for (const Type grouped_type : kGroupedTypes) {
    SCOPED_TRACE(core::type_name(grouped_type));
    const Type plain_type = core::plain_rows_type(grouped_type);
    constexpr int64_t kRows = 48;
    const int64_t k = 3 * core::block_size(plain_type);
    const std::vector<uint8_t> plain = random_rows(plain_type, kRows, k, 3);
    std::vector<uint8_t> grouped(plain.size()), back(plain.size());
    core::interleave_rows(grouped_type, plain.data(), grouped.data(), kRows, k);
    EXPECT_NE(grouped, plain);
    core::deinterleave_rows(grouped_type, grouped.data(), back.data(), kRows, k);
    EXPECT_EQ(back, plain);
    // Group 1 alone (rows 16..31) regroups into the same bytes it has within the whole matrix.
    const size_t group = 16 * core::row_size(plain_type, k);
    std::vector<uint8_t> one(group);
    core::interleave_rows(grouped_type, plain.data() + group, one.data(), 16, k);
    EXPECT_EQ(0, std::memcmp(one.data(), grouped.data() + group, group));
  }
  EXPECT_EQ(core::plain_rows_type(Type::kQ4_0x16), Type::kQ4_0);
  EXPECT_EQ(core::plain_rows_type(Type::kQ4_Kx16), Type::kQ4_K);
  EXPECT_EQ(core::plain_rows_type(Type::kQ8_0x16), Type::kQ8_0);
  EXPECT_EQ(core::plain_rows_type(Type::kQ6_K), Type::kQ6_K);
}

TEST(InterleaveRows, PutEachRowsStepInItsLane) {
  // Row 17's second block, group 1: q4_0's scale is word 1 of block 1's scales.
  const size_t q4_0_row = core::row_size(Type::kQ4_0, 96);
  const std::vector<uint8_t> q4_0 = random_rows(Type::kQ4_0, 32, 96, 5);
  std::vector<uint8_t> q4_0x16(q4_0.size());
  core::interleave_rows(Type::kQ4_0x16, q4_0.data(), q4_0x16.data(), 32, 96);
  const auto* blocks = reinterpret_cast<const core::BlockQ4_0x16*>(q4_0x16.data() + 16 * q4_0_row);
  const auto* row17 = reinterpret_cast<const core::BlockQ4_0*>(q4_0.data() + 17 * q4_0_row);
  EXPECT_EQ(blocks[1].d[1].bits, row17[1].d.bits);
  EXPECT_EQ(0, std::memcmp(blocks[1].qs[2][1], row17[1].qs + 8, 4));
  // The same for q4_k's super-blocks: d, dmin, scale bytes 8..11, quant bytes 100..103.
  const size_t q4_k_row = core::row_size(Type::kQ4_K, 512);
  const std::vector<uint8_t> q4_k = random_rows(Type::kQ4_K, 32, 512, 6);
  std::vector<uint8_t> q4_kx16(q4_k.size());
  core::interleave_rows(Type::kQ4_Kx16, q4_k.data(), q4_kx16.data(), 32, 512);
  const auto* supers = reinterpret_cast<const core::BlockQ4_Kx16*>(q4_kx16.data() + 16 * q4_k_row);
  const auto* k17 = reinterpret_cast<const core::BlockQ4_K*>(q4_k.data() + 17 * q4_k_row);
  EXPECT_EQ(supers[1].d[1].bits, k17[1].d.bits);
  EXPECT_EQ(supers[1].dmin[1].bits, k17[1].dmin.bits);
  EXPECT_EQ(0, std::memcmp(supers[1].scales[2][1], k17[1].scales + 8, 4));
  EXPECT_EQ(0, std::memcmp(supers[1].qs[25][1], k17[1].qs + 100, 4));
  // q8_0: quants 20..23 are step 5.
  const size_t q8_0_row = core::row_size(Type::kQ8_0, 96);
  const std::vector<uint8_t> q8_0 = random_rows(Type::kQ8_0, 32, 96, 7);
  std::vector<uint8_t> q8_0x16(q8_0.size());
  core::interleave_rows(Type::kQ8_0x16, q8_0.data(), q8_0x16.data(), 32, 96);
  const auto* q8_blocks =
      reinterpret_cast<const core::BlockQ8_0x16*>(q8_0x16.data() + 16 * q8_0_row);
  const auto* q8_17 = reinterpret_cast<const core::BlockQ8_0*>(q8_0.data() + 17 * q8_0_row);
  EXPECT_EQ(q8_blocks[2].d[1].bits, q8_17[2].d.bits);
  EXPECT_EQ(0, std::memcmp(q8_blocks[2].qs[5][1], q8_17[2].qs + 20, 4));
}

// out = w x with w [k, m] in `type`, its bytes given, x [k, n] random.
std::vector<float> mul_mat(Type type, const std::vector<uint8_t>& w_bytes, int64_t k, int64_t m,
                           int64_t n, int threads, Status* status) {
  Context ctx;
  Tensor* w = ctx.new_tensor(type, {k, m, 1, 1});
  Tensor* x = ctx.new_tensor(Type::kF32, {k, n, 1, 1});
  Tensor* out = core::mul_mat(ctx, w, x);
  EXPECT_TRUE(ctx.ok()) << ctx.status().message();
  if (!ctx.ok()) return {};
  const core::Graph g = core::build_graph(std::vector<Tensor*>{out});
  test::Placement placement(g);
  test::Inputs in;
  in.f32[x] = std::vector<float>(static_cast<size_t>(k * n));
  const std::vector<int32_t> r = test::random_ints(k * n, -500, 500, 7);
  for (size_t i = 0; i < r.size(); ++i) in.f32[x][i] = static_cast<float>(r[i]) / 250.0f;
  test::fill_leafs(g, in, 1);
  std::memcpy(w->data, w_bytes.data(), w_bytes.size());
  ThreadPool pool(threads);
  std::vector<uint8_t> scratch;
  *status = compute_graph(g, pool, scratch);
  return test::read_floats(*out);
}

// Decode, small batches (rows read in place), prefill (panels), for k of 1, 8 and 9 blocks.
void expect_plain_bits(Type grouped_type) {
  const Type plain_type = core::plain_rows_type(grouped_type);
  const int64_t block = core::block_size(plain_type);
  if (kernel_set().packed_dot(grouped_type, block) == nullptr) {
    // Sets without the kernel refuse the type with an error instead of computing it.
    Status s;
    mul_mat(grouped_type, std::vector<uint8_t>(16 * core::row_size(plain_type, block)), block, 16,
            1, 1, &s);
    EXPECT_EQ(s.code(), ErrorCode::kUnsupported) << s.message();
    GTEST_SKIP() << "kernel set " << kernel_set().name << " does not read "
                 << core::type_name(grouped_type);
  }
  for (int64_t k : {block, 8 * block, 9 * block}) {
    for (int64_t m : {16, 48, 96}) {
      const std::vector<uint8_t> plain =
          random_rows(plain_type, m, k, static_cast<uint64_t>(k + m));
      std::vector<uint8_t> grouped(plain.size());
      core::interleave_rows(grouped_type, plain.data(), grouped.data(), m, k);
      for (int64_t n : {1, 3, 6, 7, 64}) {
        for (int threads : {1, 2, 3}) {
          Status s1, s2;
          const std::vector<float> want = mul_mat(plain_type, plain, k, m, n, threads, &s1);
          const std::vector<float> got = mul_mat(grouped_type, grouped, k, m, n, threads, &s2);
          ASSERT_TRUE(s1.ok() && s2.ok()) << s1.message() << s2.message();
          ASSERT_EQ(got.size(), want.size());
          EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
              << "k " << k << " m " << m << " n " << n << " threads " << threads;
        }
      }
    }
  }
}

TEST(InterleaveRows, Q4_0x16MulMatGivesThePlainRowsBits) {
  expect_plain_bits(Type::kQ4_0x16);
}

TEST(InterleaveRows, Q4_Kx16MulMatGivesThePlainRowsBits) {
  expect_plain_bits(Type::kQ4_Kx16);
}

TEST(InterleaveRows, Q8_0x16MulMatGivesThePlainRowsBits) {
  expect_plain_bits(Type::kQ8_0x16);
}

TEST(InterleaveRows, OnlyWholeGroupsOfDenseRowsMultiply) {
  for (const Type grouped_type : kGroupedTypes) {
    SCOPED_TRACE(core::type_name(grouped_type));
    const int64_t k = core::block_size(grouped_type);
    Context ctx;
    Tensor* w = ctx.new_tensor(grouped_type, {k, 40, 1, 1});
    core::mul_mat(ctx, w, ctx.new_tensor(Type::kF32, {k, 1, 1, 1}));
    EXPECT_FALSE(ctx.ok());
    EXPECT_NE(ctx.status().message().find("groups of 16"), std::string::npos)
        << ctx.status().message();
    // Nothing else reads rows of it one by one.
    Context other;
    Tensor* table = other.new_tensor(grouped_type, {k, 32, 1, 1});
    core::get_rows(other, table, other.new_tensor(Type::kI32, {2, 1, 1, 1}));
    EXPECT_FALSE(other.ok());
    EXPECT_FALSE(core::type_from_name(core::type_name(grouped_type)).has_value());
    EXPECT_FALSE(core::type_from_id(static_cast<uint32_t>(grouped_type)).has_value());
  }
}

TEST(InterleaveRows, HostCopiesRegroupOnlyWhatTheKernelsRead) {
  for (const Type grouped_type : kGroupedTypes) {
    SCOPED_TRACE(core::type_name(grouped_type));
    const Type plain = core::plain_rows_type(grouped_type);
    const int64_t k = core::block_size(plain);
    const bool reads = kernel_set().packed_dot(grouped_type, k) != nullptr;
    EXPECT_EQ(host_weight_type(plain, {k, 48, 1, 1}), reads ? grouped_type : plain);
    EXPECT_EQ(host_weight_type(plain, {k, 40, 1, 1}), plain);  // not whole groups
    EXPECT_EQ(host_weight_type(plain, {k, 48, 4, 1}), plain);  // experts
  }
  EXPECT_EQ(host_weight_type(Type::kQ6_K, {256, 48, 1, 1}), Type::kQ6_K);
  std::vector<uint8_t> src(48 * 144), dst(src.size());
  EXPECT_EQ(convert_weight_rows(Type::kQ8_0, Type::kQ4_0x16, src.data(), dst.data(), 48, 64).code(),
            ErrorCode::kUnsupported);
  EXPECT_EQ(
      convert_weight_rows(Type::kQ4_0, Type::kQ4_Kx16, src.data(), dst.data(), 16, 256).code(),
      ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace strata::cpu
