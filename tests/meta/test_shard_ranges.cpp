// How a meta device divides a tensor axis between its members.
#include <gtest/gtest.h>

#include <cmath>

#include "meta/shard_ranges.h"

namespace strata::meta {
namespace {

std::vector<int64_t> bounds(int64_t units, std::vector<float> w) {
  auto b = unit_bounds(units, w);
  EXPECT_TRUE(b.ok()) << b.status().message();
  return b.ok() ? *b : std::vector<int64_t>{};
}

TEST(UnitBounds, FollowTheProportionsInWholeUnits) {
  EXPECT_EQ(bounds(4, {1, 1}), (std::vector<int64_t>{0, 2, 4}));
  EXPECT_EQ(bounds(4, {3, 1}), (std::vector<int64_t>{0, 3, 4}));
  // The unit left over goes to the first of the devices it shortchanges most.
  EXPECT_EQ(bounds(4, {1, 1, 1}), (std::vector<int64_t>{0, 2, 3, 4}));
  EXPECT_EQ(bounds(22, {2, 1, 1}), (std::vector<int64_t>{0, 11, 16, 22}));
}

TEST(UnitBounds, AShareOfHalfAUnitStillGetsOne) {
  // 3:1 of two heads is 1.5 : 0.5; the second device keeps a head.
  EXPECT_EQ(bounds(2, {3, 1}), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(bounds(3, {3, 1}), (std::vector<int64_t>{0, 2, 3}));
}

TEST(UnitBounds, ADeviceLeftWithNothingIsAnError) {
  auto b = unit_bounds(2, std::vector<float>{10, 1});
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(b.status().message().find("device 1 gets none"), std::string::npos);
  EXPECT_FALSE(unit_bounds(4, std::vector<float>{1, 0}).ok());
  EXPECT_FALSE(unit_bounds(4, std::vector<float>{1, -1}).ok());
  EXPECT_FALSE(unit_bounds(4, std::vector<float>{1, INFINITY}).ok());
}

TEST(ShardPieces, FusedSegmentsSplitByTheSameUnits) {
  // QKV of 8 query heads and 2 KV heads of 32: every device gets one KV head and its group.
  memory::TensorSplit s{1, {256, 64, 64}, 32};
  auto p = shard_pieces(384, s, std::vector<float>{1, 1});
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ((*p)[0], (Pieces{{0, 128}, {256, 288}, {320, 352}}));
  EXPECT_EQ((*p)[1], (Pieces{{128, 256}, {288, 320}, {352, 384}}));
  EXPECT_EQ(total((*p)[0]), 192);
  auto units = split_units(384, s);
  ASSERT_TRUE(units.ok());
  EXPECT_EQ(*units, 2);
}

TEST(ShardPieces, ARunThatIsNotWholeGranulesIsAnError) {
  memory::TensorSplit s{0, {}, 32};
  EXPECT_FALSE(split_units(100, s).ok());
}

}  // namespace
}  // namespace strata::meta
