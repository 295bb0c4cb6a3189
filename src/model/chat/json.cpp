#include "model/chat/json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace strata::model::jinja {
namespace {

// Nesting past kMaxValueDepth gives an undefined value, which parse_json reports.
Value from_nlohmann(const nlohmann::ordered_json& j, int depth = 0) {
  if (depth > kMaxValueDepth) return Value();
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned:
      return Value(static_cast<int64_t>(j.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float:
      return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      ValueList items;
      for (const auto& e : j) {
        items.push_back(from_nlohmann(e, depth + 1));
        if (items.back().is_undefined()) return Value();
      }
      return Value(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      ValueDict items;
      for (const auto& [k, v] : j.items()) {
        items.emplace_back(k, from_nlohmann(v, depth + 1));
        if (items.back().second.is_undefined()) return Value();
      }
      return Value(std::move(items));
    }
    default:
      return Value::none();
  }
}

void json_string(const std::string& s, std::string& out) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

Status dump(const Value& v, int indent, bool sort_keys, int level, std::string& out) {
  const std::string item_sep = indent >= 0 ? "," : ", ";
  auto newline = [&](int lvl) {
    if (indent >= 0) out += "\n" + std::string(static_cast<size_t>(indent * lvl), ' ');
  };
  switch (v.kind()) {
    case Value::Kind::kNone:
      out += "null";
      return Status::ok_status();
    case Value::Kind::kBool:
      out += v.as_bool() ? "true" : "false";
      return Status::ok_status();
    case Value::Kind::kInt:
      out += std::to_string(v.as_int());
      return Status::ok_status();
    case Value::Kind::kFloat: {
      const double f = v.as_double();
      if (std::isnan(f)) {
        out += "NaN";
      } else if (std::isinf(f)) {
        out += f < 0 ? "-Infinity" : "Infinity";
      } else {
        out += float_repr(f);
      }
      return Status::ok_status();
    }
    case Value::Kind::kString:
      json_string(v.as_string(), out);
      return Status::ok_status();
    case Value::Kind::kList: {
      if (v.is_iterator()) break;
      if (v.list().empty()) {
        out += "[]";
        return Status::ok_status();
      }
      out += '[';
      for (size_t i = 0; i < v.list().size(); ++i) {
        if (i) out += item_sep;
        newline(level + 1);
        STRATA_RETURN_IF_ERROR(dump(v.list()[i], indent, sort_keys, level + 1, out));
      }
      newline(level);
      out += ']';
      return Status::ok_status();
    }
    case Value::Kind::kDict: {
      if (v.dict().empty()) {
        out += "{}";
        return Status::ok_status();
      }
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& e : v.dict()) entries.push_back(&e);
      if (sort_keys) {
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto* a, const auto* b) { return a->first < b->first; });
      }
      out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i) out += item_sep;
        newline(level + 1);
        json_string(entries[i]->first, out);
        out += ": ";
        STRATA_RETURN_IF_ERROR(dump(entries[i]->second, indent, sort_keys, level + 1, out));
      }
      newline(level);
      out += '}';
      return Status::ok_status();
    }
    case Value::Kind::kUndefined:
    case Value::Kind::kNamespace:
    case Value::Kind::kCallable:
      break;
  }
  return error(ErrorCode::kInvalidArgument,
               "Object of type " + v.type_name() + " is not JSON serializable");
}

}  // namespace

Result<Value> parse_json(const std::string& text) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(text, nullptr, false);
  if (j.is_discarded()) return error(ErrorCode::kInvalidArgument, "malformed JSON");
  Value v = from_nlohmann(j);
  if (v.is_undefined()) return error(ErrorCode::kInvalidArgument, "JSON nested too deeply");
  return v;
}

Result<std::string> to_json(const Value& value, int indent, bool sort_keys) {
  std::string out;
  STRATA_RETURN_IF_ERROR(dump(value, indent, sort_keys, 0, out));
  return out;
}

}  // namespace strata::model::jinja
