#include "gguf/value.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <limits>
#include <string>
#include <type_traits>

namespace strata::gguf {

std::string_view value_type_name(ValueType t) {
  switch (t) {
    case ValueType::kUint8:
      return "u8";
    case ValueType::kInt8:
      return "i8";
    case ValueType::kUint16:
      return "u16";
    case ValueType::kInt16:
      return "i16";
    case ValueType::kUint32:
      return "u32";
    case ValueType::kInt32:
      return "i32";
    case ValueType::kFloat32:
      return "f32";
    case ValueType::kBool:
      return "bool";
    case ValueType::kString:
      return "string";
    case ValueType::kArray:
      return "array";
    case ValueType::kUint64:
      return "u64";
    case ValueType::kInt64:
      return "i64";
    case ValueType::kFloat64:
      return "f64";
  }
  return "invalid";
}

std::optional<ValueType> value_type_from_id(uint32_t id) {
  if (id > static_cast<uint32_t>(ValueType::kFloat64)) return std::nullopt;
  return static_cast<ValueType>(id);
}

std::optional<int64_t> Value::as_int() const {
  return std::visit(
      [](const auto& v) -> std::optional<int64_t> {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, uint64_t>) {
          if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
          return static_cast<int64_t>(v);
        } else if constexpr (std::is_integral_v<T>) {
          return static_cast<int64_t>(v);
        } else {
          return std::nullopt;
        }
      },
      data);
}

std::optional<double> Value::as_double() const {
  return std::visit(
      [](const auto& v) -> std::optional<double> {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
          return static_cast<double>(v);
        } else {
          return std::nullopt;
        }
      },
      data);
}

const std::string* Value::as_string() const {
  return std::get_if<std::string>(&data);
}

const Array* Value::as_array() const {
  return std::get_if<Array>(&data);
}

namespace {

// Control characters and quotes are escaped so a hostile string cannot break the line a
// message or `strata inspect` prints it on.
void append_quoted(std::string& out, const std::string& s) {
  out += '"';
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
}

// Shortest text that reads back to the same value.
template <typename F>
void append_float(std::string& out, F v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, r.ptr);
}

void append_display(std::string& out, const Value& value, size_t max_items) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          out += v ? "true" : "false";
        } else if constexpr (std::is_floating_point_v<T>) {
          append_float(out, v);
        } else if constexpr (std::is_integral_v<T>) {
          // Through int64/uint64 so that u8 and i8 print as numbers, not characters.
          if constexpr (std::is_signed_v<T>) {
            out += std::to_string(static_cast<int64_t>(v));
          } else {
            out += std::to_string(static_cast<uint64_t>(v));
          }
        } else if constexpr (std::is_same_v<T, std::string>) {
          append_quoted(out, v);
        } else {
          out += '[';
          const size_t shown = std::min(max_items, v.items.size());
          for (size_t i = 0; i < shown; ++i) {
            if (i > 0) out += ", ";
            append_display(out, v.items[i], max_items);
          }
          if (shown < v.items.size()) {
            out += shown > 0 ? ", ... (" : "... (";
            out += std::to_string(v.items.size());
            out += " items)";
          }
          out += ']';
        }
      },
      value.data);
}

}  // namespace

std::string Value::to_display_string(size_t max_items) const {
  std::string out;
  append_display(out, *this, max_items);
  return out;
}

}  // namespace strata::gguf
