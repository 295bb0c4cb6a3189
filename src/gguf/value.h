// GGUF metadata values: every scalar type, strings, and (possibly nested) arrays.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
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
/// The value type with GGUF id `id`; nullopt for ids GGUF does not define.
std::optional<ValueType> value_type_from_id(uint32_t id);

struct Value;

/// An array: its element type and the elements (which may themselves be arrays).
struct Array {
  ValueType element_type = ValueType::kUint8;
  std::vector<Value> items;

  /// Same element type and equal items.
  bool operator==(const Array&) const = default;
};

/// One metadata value.
struct Value {
  /// Alternatives are in ValueType order, so `data.index()` equals the type id.
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

  /// Same type and equal contents (floats compare as floats: NaN is unequal to itself).
  bool operator==(const Value&) const = default;
};

/// One key-value pair, in file order.
struct KeyValue {
  std::string key;
  Value value;
};

namespace detail {
template <typename T, size_t I = 0>
constexpr size_t storage_index() {
  static_assert(I < std::variant_size_v<Value::Storage>, "not a GGUF metadata value type");
  if constexpr (std::is_same_v<T, std::variant_alternative_t<I, Value::Storage>>) {
    return I;
  } else {
    return storage_index<T, I + 1>();
  }
}
}  // namespace detail

/// The value type that stores C++ type T (uint32_t -> kUint32, std::string -> kString).
template <typename T>
constexpr ValueType value_type_of() {
  return static_cast<ValueType>(detail::storage_index<T>());
}

/// A scalar or string value. Spell the width: make_value(uint32_t{32}), make_value(1.0f).
template <typename T>
Value make_value(T v) {
  constexpr size_t kIndex = detail::storage_index<T>();
  return Value{static_cast<ValueType>(kIndex),
               Value::Storage(std::in_place_index<kIndex>, std::move(v))};
}

/// A string value (saves spelling std::string around a literal).
inline Value make_string(std::string s) {
  return make_value(std::move(s));
}

/// An array of scalars or strings.
template <typename T>
Value make_array(const std::vector<T>& items) {
  Array a{value_type_of<T>(), {}};
  a.items.reserve(items.size());
  // auto&& because std::vector<bool> yields proxies, not bools.
  for (auto&& item : items) a.items.push_back(make_value<T>(item));
  return make_value(std::move(a));
}

/// An array of values already built (arrays of arrays); every item should have `element_type`.
inline Value make_array(ValueType element_type, std::vector<Value> items) {
  return make_value(Array{element_type, std::move(items)});
}

}  // namespace strata::gguf
