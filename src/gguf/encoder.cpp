#include "gguf/encoder.h"

#include <string>

#include "gguf/layout.h"

namespace strata::gguf {

void Encoder::put_string(std::string_view s) {
  put(static_cast<uint64_t>(s.size()));
  bytes_.insert(bytes_.end(), s.begin(), s.end());
}

void Encoder::put_value(const Value& value) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          put(static_cast<uint8_t>(v ? 1 : 0));
        } else if constexpr (std::is_arithmetic_v<T>) {
          put(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          put_string(v);
        } else {
          put(static_cast<uint32_t>(v.element_type));
          put(static_cast<uint64_t>(v.items.size()));
          for (const Value& item : v.items) put_value(item);
        }
      },
      value.data);
}

void Encoder::put_tensor_info(const TensorInfo& t) {
  put_string(t.name);
  put(static_cast<uint32_t>(t.n_dims));
  for (int d = 0; d < t.n_dims; ++d) put(static_cast<uint64_t>(t.ne[d]));
  put(static_cast<uint32_t>(t.type));
  put(static_cast<uint64_t>(t.offset));
}

namespace {

Status check_value_at(std::string_view key, const Value& v, int depth) {
  const auto invalid = [&](const std::string& problem) {
    return error(ErrorCode::kInvalidArgument,
                 "gguf writer: metadata '" + std::string(key) + "' " + problem);
  };
  if (!value_type_from_id(static_cast<uint32_t>(v.type))) {
    return invalid("has invalid value type " + std::to_string(static_cast<uint32_t>(v.type)));
  }
  // Storage alternatives are in ValueType order.
  if (v.data.index() != static_cast<size_t>(v.type)) {
    return invalid("is declared " + std::string(value_type_name(v.type)) + " but holds a " +
                   std::string(value_type_name(static_cast<ValueType>(v.data.index()))));
  }
  const Array* a = v.as_array();
  if (a == nullptr) return Status::ok_status();
  if (!value_type_from_id(static_cast<uint32_t>(a->element_type))) {
    return invalid("is an array of invalid value type " +
                   std::to_string(static_cast<uint32_t>(a->element_type)));
  }
  if (depth >= kMaxArrayDepth) {
    return invalid("has arrays nested deeper than " + std::to_string(kMaxArrayDepth) + " levels");
  }
  for (const Value& item : a->items) {
    if (item.type != a->element_type) {
      return invalid("is an array of " + std::string(value_type_name(a->element_type)) +
                     " holding a " + std::string(value_type_name(item.type)));
    }
    STRATA_RETURN_IF_ERROR(check_value_at(key, item, depth + 1));
  }
  return Status::ok_status();
}

}  // namespace

Status check_value(std::string_view key, const Value& v) {
  return check_value_at(key, v, 0);
}

}  // namespace strata::gguf
