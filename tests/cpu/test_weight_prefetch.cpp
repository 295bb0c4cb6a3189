// WeightPrefetch (cpu/weight_prefetch.h): which products a waiting thread prefetches for, and
// that its idle work asks for each participant's share once and then ends.
#include "cpu/weight_prefetch.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/ops.h"

namespace strata::cpu {
namespace {

using core::Tensor;
using core::Type;

// Steps the idle work until it says it is done; how many steps that took.
int steps_to_finish(WeightPrefetch& p) {
  const ThreadPool::IdleWork idle = p.idle();
  if (idle.step == nullptr) return 0;
  int n = 1;
  while (idle.step(idle.ctx)) ++n;
  return n;
}

TEST(WeightPrefetch, AsksForEachShareOfDecodeWeightsOnce) {
  core::Context ctx;
  Tensor* w = ctx.new_tensor(Type::kF32, {256, 64, 1, 1}, "w");  // 64 KiB
  w->flags |= core::kFlagWeight;
  Tensor* x1 = ctx.new_tensor(Type::kF32, {256, 1, 1, 1}, "x1");
  Tensor* x8 = ctx.new_tensor(Type::kF32, {256, 8, 1, 1}, "x8");
  Tensor* decode = core::mul_mat(ctx, w, x1);
  Tensor* prompt = core::mul_mat(ctx, w, x8);
  Tensor* not_weight = core::mul_mat(ctx, x8, x1);
  ASSERT_TRUE(ctx.ok());
  std::vector<float> mem(256 * 64);
  w->data = mem.data();

  const std::vector<const Tensor*> d{decode}, p{prompt}, n{not_weight};
  EXPECT_TRUE(WeightPrefetch::has_target(d));
  EXPECT_FALSE(WeightPrefetch::has_target(p));  // a prompt's GEMM is bound by compute
  EXPECT_FALSE(WeightPrefetch::has_target(n));

  // Half of 64 KiB is 512 lines, 8 a step.
  WeightPrefetch second(d, 1, 2);
  EXPECT_EQ(steps_to_finish(second), 64);
  EXPECT_EQ(steps_to_finish(second), 0);  // done for good
  WeightPrefetch none(p, 0, 2);
  EXPECT_EQ(steps_to_finish(none), 0);
  WeightPrefetch nothing;
  EXPECT_EQ(steps_to_finish(nothing), 0);
}

}  // namespace
}  // namespace strata::cpu
