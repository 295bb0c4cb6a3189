// q4_0 weights regrouped at load (q4_0x16): the regrouping is lossless, mul_mat over them gives
// the bits of mul_mat over the plain rows on every path (decode, small batches, prefill's
// panel) and thread count, and the host copies only weights the running kernel set reads.
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

std::vector<uint8_t> random_q4_0(int64_t rows, int64_t k, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(rows * k));
  const std::vector<int32_t> r = test::random_ints(rows * k, -1000, 1000, seed);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(r[i]) / 300.0f;
  std::vector<uint8_t> q(core::row_size(Type::kQ4_0, k) * static_cast<size_t>(rows));
  core::traits(Type::kQ4_0).from_float(v.data(), q.data(), rows * k);
  return q;
}

TEST(InterleaveQ4_0x16, RoundTripsAndKeepsEachGroupInItsRowsBytes) {
  constexpr int64_t kRows = 48, kK = 96;
  const std::vector<uint8_t> plain = random_q4_0(kRows, kK, 3);
  std::vector<uint8_t> grouped(plain.size()), back(plain.size());
  core::interleave_q4_0x16(plain.data(), grouped.data(), kRows, kK);
  EXPECT_NE(grouped, plain);
  core::deinterleave_q4_0x16(grouped.data(), back.data(), kRows, kK);
  EXPECT_EQ(back, plain);
  // Group 1 alone (rows 16..31) regroups into the same bytes it has within the whole matrix.
  const size_t group = 16 * core::row_size(Type::kQ4_0, kK);
  std::vector<uint8_t> one(group);
  core::interleave_q4_0x16(plain.data() + group, one.data(), 16, kK);
  EXPECT_EQ(0, std::memcmp(one.data(), grouped.data() + group, group));
  // Row 17's second block: its scale is word 1 of block 1's scales.
  const auto* blocks = reinterpret_cast<const core::BlockQ4_0x16*>(grouped.data() + group);
  const auto* row17 =
      reinterpret_cast<const core::BlockQ4_0*>(plain.data() + 17 * core::row_size(Type::kQ4_0, kK));
  EXPECT_EQ(blocks[1].d[1].bits, row17[1].d.bits);
  EXPECT_EQ(0, std::memcmp(blocks[1].qs[2][1], row17[1].qs + 8, 4));
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

TEST(InterleaveQ4_0x16, MulMatGivesThePlainRowsBits) {
  if (kernel_set().packed_dot(Type::kQ4_0x16, 32) == nullptr) {
    // Sets without the kernel refuse the type with an error instead of computing it.
    Status s;
    mul_mat(Type::kQ4_0x16, std::vector<uint8_t>(16 * 18), 32, 16, 1, 1, &s);
    EXPECT_EQ(s.code(), ErrorCode::kUnsupported) << s.message();
    GTEST_SKIP() << "kernel set " << kernel_set().name << " does not read q4_0x16";
  }
  for (int64_t k : {32, 256, 2080}) {
    for (int64_t m : {16, 48, 96}) {
      const std::vector<uint8_t> plain = random_q4_0(m, k, static_cast<uint64_t>(k + m));
      std::vector<uint8_t> grouped(plain.size());
      core::interleave_q4_0x16(plain.data(), grouped.data(), m, k);
      // Decode, small batches (rows transposed on the fly), prefill (panels).
      for (int64_t n : {1, 3, 6, 7, 64}) {
        for (int threads : {1, 2, 3}) {
          Status s1, s2;
          const std::vector<float> want = mul_mat(Type::kQ4_0, plain, k, m, n, threads, &s1);
          const std::vector<float> got = mul_mat(Type::kQ4_0x16, grouped, k, m, n, threads, &s2);
          ASSERT_TRUE(s1.ok() && s2.ok()) << s1.message() << s2.message();
          ASSERT_EQ(got.size(), want.size());
          EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
              << "k " << k << " m " << m << " n " << n << " threads " << threads;
        }
      }
    }
  }
}

TEST(InterleaveQ4_0x16, OnlyWholeGroupsOfDenseRowsMultiply) {
  Context ctx;
  Tensor* w = ctx.new_tensor(Type::kQ4_0x16, {64, 40, 1, 1});
  core::mul_mat(ctx, w, ctx.new_tensor(Type::kF32, {64, 1, 1, 1}));
  EXPECT_FALSE(ctx.ok());
  EXPECT_NE(ctx.status().message().find("groups of 16"), std::string::npos)
      << ctx.status().message();
  // Nothing else reads rows of it one by one.
  Context other;
  Tensor* table = other.new_tensor(Type::kQ4_0x16, {64, 32, 1, 1});
  core::get_rows(other, table, other.new_tensor(Type::kI32, {2, 1, 1, 1}));
  EXPECT_FALSE(other.ok());
  EXPECT_FALSE(core::type_from_name("q4_0x16").has_value());
  EXPECT_FALSE(core::type_from_id(static_cast<uint32_t>(Type::kQ4_0x16)).has_value());
}

TEST(InterleaveQ4_0x16, HostCopiesRegroupOnlyWhatTheKernelsRead) {
  const bool reads = kernel_set().packed_dot(Type::kQ4_0x16, 64) != nullptr;
  EXPECT_EQ(host_weight_type(Type::kQ4_0, {64, 48, 1, 1}), reads ? Type::kQ4_0x16 : Type::kQ4_0);
  EXPECT_EQ(host_weight_type(Type::kQ4_0, {64, 40, 1, 1}), Type::kQ4_0);  // not whole groups
  EXPECT_EQ(host_weight_type(Type::kQ4_0, {64, 48, 4, 1}), Type::kQ4_0);  // experts
  EXPECT_EQ(host_weight_type(Type::kQ8_0, {64, 48, 1, 1}), Type::kQ8_0);
  std::vector<uint8_t> src(48 * 36), dst(src.size());
  EXPECT_EQ(convert_weight_rows(Type::kQ8_0, Type::kQ4_0x16, src.data(), dst.data(), 48, 64).code(),
            ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace strata::cpu
