#include <gtest/gtest.h>

#include <vector>

#include "core/pointer_map.h"

namespace strata::core {
namespace {

TEST(PointerMap, FindsWhatWasInsertedAcrossGrowth) {
  std::vector<int> objects(1000);
  PointerMap<int> m(4);  // grows several times
  for (size_t i = 0; i < objects.size(); ++i) {
    const auto [value, inserted] = m.insert(&objects[i], static_cast<int>(i));
    EXPECT_TRUE(inserted);
    EXPECT_EQ(*value, static_cast<int>(i));
  }
  for (size_t i = 0; i < objects.size(); ++i) {
    ASSERT_NE(m.find(&objects[i]), nullptr);
    EXPECT_EQ(*m.find(&objects[i]), static_cast<int>(i));
  }
  int other = 0;
  EXPECT_EQ(m.find(&other), nullptr);
  EXPECT_FALSE(m.contains(&other));
}

TEST(PointerMap, InsertKeepsTheFirstValue) {
  int a = 0;
  PointerMap<int> m;
  EXPECT_TRUE(m.insert(&a, 1).second);
  const auto [value, inserted] = m.insert(&a, 2);
  EXPECT_FALSE(inserted);
  EXPECT_EQ(*value, 1);
  *value = 3;
  EXPECT_EQ(*m.find(&a), 3);
}

}  // namespace
}  // namespace strata::core
