// supports_op tells the truth: a node a device accepts is one its kernels compute, so the
// scheduler never places a node where it would fail at run time.
#include <gtest/gtest.h>

#include "core/context.h"
#include "core/ops.h"
#include "cpu/kernels/dispatch.h"
#include "devices/host_device.h"
#include "devices/partition_device.h"

namespace strata::devices {
namespace {

TEST(SupportsOp, AgreesWithTheCpuKernelChecks) {
  core::Context ctx;
  core::Tensor* a = ctx.new_tensor(core::Type::kF32, {8, 4, 1, 1}, "a");
  core::Tensor* b = ctx.new_tensor(core::Type::kF32, {8, 4, 1, 1}, "b");
  core::Tensor* sum = core::add(ctx, a, b);
  PartitionDevice part({0, {0}, -1, 0});
  EXPECT_TRUE(host_device().supports_op(*sum));
  EXPECT_TRUE(part.supports_op(*sum));

  // F16 is a type the CPU converts, but its add kernel writes only F32: the device used to
  // accept this node because every type in it was computable.
  core::Tensor* half = core::add(ctx, a, b);
  half->type = core::Type::kF16;
  ASSERT_FALSE(cpu::check_node(*half).ok());
  EXPECT_FALSE(host_device().supports_op(*half));
  EXPECT_FALSE(part.supports_op(*half));
}

}  // namespace
}  // namespace strata::devices
