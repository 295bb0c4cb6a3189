// Attribute, item and slice lookup, and iteration, with jinja2's fallbacks: a missing
// entry is undefined rather than an error, but touching an undefined value is.
#include <algorithm>

#include "model/chat/builtins.h"

namespace strata::model::jinja {

std::vector<std::string> utf8_chars(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 1;
    if (i + len > s.size()) len = 1;
    out.push_back(s.substr(i, len));
    i += len;
  }
  return out;
}

Status undefined_error(const Value& value) {
  if (value.as_string().empty()) return error(ErrorCode::kInvalidArgument, "value is undefined");
  return error(ErrorCode::kInvalidArgument, value.as_string());
}

Result<Value> get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) return undefined_error(obj);
  if (const Value* v = obj.find(name)) return *v;
  return Value::undefined("'" + obj.type_name() + " object' has no attribute '" + name + "'");
}

namespace {

// Python's index normalisation: negative counts from the end; false when out of range.
bool normalize_index(int64_t& i, size_t size) {
  if (i < 0) i += static_cast<int64_t>(size);
  return i >= 0 && i < static_cast<int64_t>(size);
}

}  // namespace

Result<Value> get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) return undefined_error(obj);
  if (obj.is_iterator()) {
    return error(ErrorCode::kInvalidArgument, "'generator' object is not subscriptable");
  }
  if (obj.is_dict() || obj.kind() == Value::Kind::kNamespace) {
    if (key.is_string()) {
      if (const Value* v = obj.find(key.as_string())) return *v;
    }
    return Value::undefined("'dict object' has no attribute " + key.repr());
  }
  if ((obj.is_list() || obj.is_string()) &&
      (key.kind() == Value::Kind::kInt || key.kind() == Value::Kind::kBool)) {
    int64_t i = key.as_int();
    if (obj.is_list()) {
      if (!normalize_index(i, obj.list().size())) {
        return Value::undefined("list index out of range");
      }
      return obj.list()[static_cast<size_t>(i)];
    }
    const std::vector<std::string> chars = utf8_chars(obj.as_string());
    if (!normalize_index(i, chars.size())) return Value::undefined("string index out of range");
    return Value(chars[static_cast<size_t>(i)]);
  }
  return Value::undefined("'" + obj.type_name() + " object' has no attribute " + key.repr());
}

Result<Value> slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is_undefined()) return undefined_error(obj);
  auto given = [](const Value& v) { return !v.is_undefined() && !v.is_none(); };
  for (const Value* v : {&start, &stop, &step}) {
    if (given(*v) && v->kind() != Value::Kind::kInt && v->kind() != Value::Kind::kBool) {
      return error(ErrorCode::kInvalidArgument, "slice indices must be integers or None");
    }
  }
  std::vector<Value> items;
  std::vector<std::string> chars;
  if (obj.is_list() && !obj.is_iterator()) {
    items = obj.list();
  } else if (obj.is_string()) {
    chars = utf8_chars(obj.as_string());
  } else {
    return error(ErrorCode::kInvalidArgument,
                 "'" + obj.type_name() + "' object is not subscriptable");
  }
  const int64_t n = static_cast<int64_t>(obj.is_list() ? items.size() : chars.size());
  const int64_t st = given(step) ? step.as_int() : 1;
  if (st == 0) return error(ErrorCode::kInvalidArgument, "slice step cannot be zero");
  // CPython's PySlice_AdjustIndices.
  auto adjust = [&](const Value& v, int64_t def) {
    if (!given(v)) return def;
    int64_t i = v.as_int();
    if (i < 0) {
      i += n;
      if (i < 0) i = st < 0 ? -1 : 0;
    } else if (i >= n) {
      i = st < 0 ? n - 1 : n;
    }
    return i;
  };
  const int64_t b = adjust(start, st < 0 ? n - 1 : 0);
  const int64_t e = adjust(stop, st < 0 ? -1 : n);
  ValueList out_items;
  std::string out_text;
  for (int64_t i = b; st > 0 ? i < e : i > e;) {
    if (obj.is_list()) {
      out_items.push_back(items[static_cast<size_t>(i)]);
    } else {
      out_text += chars[static_cast<size_t>(i)];
    }
    if (__builtin_add_overflow(i, st, &i)) break;  // a huge step leaves the sequence
  }
  if (obj.is_list()) return Value(std::move(out_items), obj.is_tuple());
  return Value(std::move(out_text));
}

Result<ValueList> iterate(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      return ValueList{};
    case Value::Kind::kList:
      return value.list();
    case Value::Kind::kDict: {
      ValueList keys;
      for (const auto& [k, v] : value.dict()) keys.emplace_back(k);
      return keys;
    }
    case Value::Kind::kString: {
      ValueList chars;
      for (std::string& c : utf8_chars(value.as_string())) chars.emplace_back(std::move(c));
      return chars;
    }
    default:
      return error(ErrorCode::kInvalidArgument,
                   "'" + value.type_name() + "' object is not iterable");
  }
}

}  // namespace strata::model::jinja
