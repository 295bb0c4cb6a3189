#include <string>
#include <unordered_set>
#include <utility>

#include "gguf/parser.h"

namespace strata::gguf {
namespace {

// Fewest bytes one item of type `t` takes in a file (a string is at least its length field,
// an array its element type and count). Dividing the bytes left by it bounds any count
// before the count is used to allocate.
size_t min_encoded_size(ValueType t) {
  switch (t) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kBool:
      return 1;
    case ValueType::kUint16:
    case ValueType::kInt16:
      return 2;
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kFloat32:
      return 4;
    case ValueType::kUint64:
    case ValueType::kInt64:
    case ValueType::kFloat64:
    case ValueType::kString:
      return 8;
    case ValueType::kArray:
      return 12;
  }
  return 1;
}

// Reads the value of one metadata entry; `what` names the entry in messages.
class ValueReader {
 public:
  ValueReader(Cursor& cursor, std::string what) : cursor_(cursor), what_(std::move(what)) {}

  Result<Value> read(ValueType type, int depth) {
    switch (type) {
      case ValueType::kUint8:
        return scalar<uint8_t>();
      case ValueType::kInt8:
        return scalar<int8_t>();
      case ValueType::kUint16:
        return scalar<uint16_t>();
      case ValueType::kInt16:
        return scalar<int16_t>();
      case ValueType::kUint32:
        return scalar<uint32_t>();
      case ValueType::kInt32:
        return scalar<int32_t>();
      case ValueType::kFloat32:
        return scalar<float>();
      case ValueType::kUint64:
        return scalar<uint64_t>();
      case ValueType::kInt64:
        return scalar<int64_t>();
      case ValueType::kFloat64:
        return scalar<double>();
      case ValueType::kBool:
        return boolean();
      case ValueType::kString:
        return string();
      case ValueType::kArray:
        return array(depth);
    }
    return fail("has unknown value type " + std::to_string(static_cast<uint32_t>(type)));
  }

 private:
  template <typename T>
  Result<Value> scalar() {
    auto v = cursor_.read<T>(what_);
    if (!v.ok()) return v.status();
    return make_value(*v);
  }

  // A bool is one byte; anything but 0 or 1 is corruption, and loading it into a bool
  // directly would be undefined behaviour.
  Result<Value> boolean() {
    auto v = cursor_.read<uint8_t>(what_);
    if (!v.ok()) return v.status();
    if (*v > 1) return fail("has invalid bool byte " + std::to_string(*v));
    return make_value(*v == 1);
  }

  Result<Value> string() {
    auto s = cursor_.read_string(what_);
    if (!s.ok()) return s.status();
    return make_value(std::move(*s));
  }

  Result<Value> array(int depth) {
    if (depth >= kMaxArrayDepth) {
      return fail("has arrays nested deeper than " + std::to_string(kMaxArrayDepth) + " levels");
    }
    auto type_id = cursor_.read<uint32_t>(what_);
    if (!type_id.ok()) return type_id.status();
    const auto element_type = value_type_from_id(*type_id);
    if (!element_type) {
      return fail("has an array of unknown value type " + std::to_string(*type_id));
    }
    auto count = cursor_.read<uint64_t>(what_);
    if (!count.ok()) return count.status();
    if (*count > cursor_.remaining() / min_encoded_size(*element_type)) {
      return fail("has an array of " + std::to_string(*count) + " " +
                  std::string(value_type_name(*element_type)) +
                  " items, which cannot fit in the remaining " +
                  std::to_string(cursor_.remaining()) + " bytes of the file");
    }
    Array a{*element_type, {}};
    a.items.reserve(static_cast<size_t>(*count));
    for (uint64_t i = 0; i < *count; ++i) {
      auto item = read(*element_type, depth + 1);
      if (!item.ok()) return item.status();
      a.items.push_back(std::move(*item));
    }
    return make_value(std::move(a));
  }

  Status fail(const std::string& problem) const {
    return error(ErrorCode::kMalformed, "gguf: " + what_ + " " + problem);
  }

  Cursor& cursor_;
  std::string what_;
};

}  // namespace

Result<std::vector<KeyValue>> read_metadata(Cursor& cursor, uint64_t count) {
  // A key-value pair takes at least a key length, a type and a one-byte value.
  constexpr size_t kMinEntrySize = 8 + 4 + 1;
  if (count > cursor.remaining() / kMinEntrySize) {
    return error(ErrorCode::kMalformed,
                 "gguf: metadata count " + std::to_string(count) + " cannot fit in the remaining " +
                     std::to_string(cursor.remaining()) + " bytes of the file");
  }
  std::vector<KeyValue> entries;
  entries.reserve(static_cast<size_t>(count));
  std::unordered_set<std::string> keys;
  for (uint64_t i = 0; i < count; ++i) {
    auto key = cursor.read_string("the key of metadata entry " + std::to_string(i));
    if (!key.ok()) return key.status();
    if (key->empty()) {
      return error(ErrorCode::kMalformed,
                   "gguf: metadata entry " + std::to_string(i) + " has an empty key");
    }
    if (!keys.insert(*key).second) {
      return error(ErrorCode::kMalformed, "gguf: duplicate metadata key '" + *key + "'");
    }
    const std::string what = "metadata '" + *key + "'";
    auto type_id = cursor.read<uint32_t>("the value type of " + what);
    if (!type_id.ok()) return type_id.status();
    const auto type = value_type_from_id(*type_id);
    if (!type) {
      return error(ErrorCode::kMalformed,
                   "gguf: " + what + " has unknown value type " + std::to_string(*type_id));
    }
    auto value = ValueReader(cursor, what).read(*type, 0);
    if (!value.ok()) return value.status();
    entries.push_back({std::move(*key), std::move(*value)});
  }
  return entries;
}

}  // namespace strata::gguf
