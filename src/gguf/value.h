// GGUF metadata values: every scalar type, strings, and (possibly nested) arrays.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace strata::gguf {

/// GGUF's metadata value type ids.
enum class ValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

/// Name of a value type ("u32", "string", "array"), for messages and `strata inspect`.
std::string_view value_type_name(ValueType t);

struct Value;

/// An array: its element type and the elements (which may themselves be arrays).
struct Array {
  ValueType element_type = ValueType::kUint8;
  std::vector<Value> items;
};

/// One metadata value.
struct Value {
  using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                               std::string, Array, uint64_t, int64_t, double>;
  ValueType type = ValueType::kUint8;
  Storage data;

  /// The value as a signed integer when it is an integer (or bool) that fits; else nullopt.
  std::optional<int64_t> as_int() const;
  /// The value as a double when it is numeric; else nullopt.
  std::optional<double> as_double() const;
  /// The string when it is one; else nullptr.
  const std::string* as_string() const;
  /// The array when it is one; else nullptr.
  const Array* as_array() const;
  /// Short human-readable rendering; long arrays are abbreviated.
  std::string to_display_string(size_t max_items = 8) const;
};

/// One key-value pair, in file order.
struct KeyValue {
  std::string key;
  Value value;
};

}  // namespace strata::gguf
