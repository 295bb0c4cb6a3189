#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gguf/value.h"

namespace strata::gguf {
namespace {

TEST(ValueTest, TypeNamesAndIds) {
  EXPECT_EQ(value_type_name(ValueType::kUint32), "u32");
  EXPECT_EQ(value_type_name(ValueType::kString), "string");
  EXPECT_EQ(value_type_name(ValueType::kArray), "array");
  EXPECT_EQ(value_type_name(ValueType::kFloat64), "f64");
  EXPECT_EQ(value_type_from_id(12), ValueType::kFloat64);
  EXPECT_EQ(value_type_from_id(13), std::nullopt);
}

TEST(ValueTest, MakeValueSetsTheMatchingType) {
  EXPECT_EQ(make_value(uint8_t{1}).type, ValueType::kUint8);
  EXPECT_EQ(make_value(int8_t{1}).type, ValueType::kInt8);
  EXPECT_EQ(make_value(uint16_t{1}).type, ValueType::kUint16);
  EXPECT_EQ(make_value(int16_t{1}).type, ValueType::kInt16);
  EXPECT_EQ(make_value(uint32_t{1}).type, ValueType::kUint32);
  EXPECT_EQ(make_value(int32_t{1}).type, ValueType::kInt32);
  EXPECT_EQ(make_value(1.0f).type, ValueType::kFloat32);
  EXPECT_EQ(make_value(true).type, ValueType::kBool);
  EXPECT_EQ(make_string("x").type, ValueType::kString);
  EXPECT_EQ(make_value(uint64_t{1}).type, ValueType::kUint64);
  EXPECT_EQ(make_value(int64_t{1}).type, ValueType::kInt64);
  EXPECT_EQ(make_value(1.0).type, ValueType::kFloat64);
  const Value a = make_array(std::vector<float>{1, 2});
  ASSERT_NE(a.as_array(), nullptr);
  EXPECT_EQ(a.as_array()->element_type, ValueType::kFloat32);
  EXPECT_EQ(a.as_array()->items.size(), 2u);
}

TEST(ValueTest, Conversions) {
  EXPECT_EQ(make_value(int8_t{-3}).as_int(), -3);
  EXPECT_EQ(make_value(uint32_t{4000000000u}).as_int(), 4000000000);
  EXPECT_EQ(make_value(true).as_int(), 1);
  EXPECT_EQ(make_value(std::numeric_limits<uint64_t>::max()).as_int(), std::nullopt);
  EXPECT_EQ(make_value(1.5f).as_int(), std::nullopt);
  EXPECT_EQ(make_value(1.5f).as_double(), 1.5);
  EXPECT_EQ(make_value(int64_t{-7}).as_double(), -7.0);
  EXPECT_EQ(make_value(true).as_double(), std::nullopt);
  EXPECT_EQ(make_string("x").as_double(), std::nullopt);
  ASSERT_NE(make_string("x").as_string(), nullptr);
  EXPECT_EQ(*make_string("x").as_string(), "x");
  EXPECT_EQ(make_value(uint8_t{1}).as_string(), nullptr);
  EXPECT_EQ(make_value(uint8_t{1}).as_array(), nullptr);
}

TEST(ValueTest, DisplayString) {
  EXPECT_EQ(make_value(uint8_t{65}).to_display_string(), "65");
  EXPECT_EQ(make_value(int8_t{-1}).to_display_string(), "-1");
  EXPECT_EQ(make_value(std::numeric_limits<uint64_t>::max()).to_display_string(),
            "18446744073709551615");
  EXPECT_EQ(make_value(1e-5f).to_display_string(), "1e-05");
  EXPECT_EQ(make_value(0.1).to_display_string(), "0.1");
  EXPECT_EQ(make_value(false).to_display_string(), "false");
  EXPECT_EQ(make_string("a\"b\n\x01").to_display_string(), "\"a\\\"b\\n\\x01\"");
  EXPECT_EQ(make_array(std::vector<int32_t>{1, 2, 3}).to_display_string(), "[1, 2, 3]");
  EXPECT_EQ(make_array(std::vector<int32_t>{1, 2, 3, 4}).to_display_string(2),
            "[1, 2, ... (4 items)]");
  EXPECT_EQ(make_array(std::vector<int32_t>{1, 2}).to_display_string(0), "[... (2 items)]");
  const Value nested = make_array(ValueType::kArray, {make_array(std::vector<std::string>{"x"}),
                                                      make_array(std::vector<bool>{})});
  EXPECT_EQ(nested.to_display_string(), "[[\"x\"], []]");
}

}  // namespace
}  // namespace strata::gguf
