#include "model/chat/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace strata::model::jinja {

Value::Value(ValueList items, bool tuple)
    : kind_(Kind::kList), seq_(tuple ? Seq::kTuple : Seq::kList) {
  for (const Value& v : items) depth_ = std::max(depth_, v.depth_);
  ++depth_;
  list_ = std::make_shared<const ValueList>(std::move(items));
}

Value::Value(ValueDict items) : kind_(Kind::kDict) {
  for (const auto& [k, v] : items) depth_ = std::max(depth_, v.depth_);
  ++depth_;
  dict_ = std::make_shared<ValueDict>(std::move(items));
}

Value Value::iterator(ValueList items) {
  Value v(std::move(items));
  v.seq_ = Seq::kIterator;
  return v;
}

Value Value::markup(std::string s) {
  Value v(std::move(s));
  v.markup_ = true;
  return v;
}

Value Value::make_namespace(ValueDict items) {
  Value v(Kind::kNamespace);
  v.dict_ = std::make_shared<ValueDict>(std::move(items));
  return v;
}

Value Value::function(Callable fn) {
  Value v(Kind::kCallable);
  v.fn_ = std::make_shared<const Callable>(std::move(fn));
  return v;
}

const Value* Value::find(const std::string& key) const {
  if (kind_ != Kind::kDict && kind_ != Kind::kNamespace) return nullptr;
  for (const auto& [k, v] : *dict_) {
    if (k == key) return &v;
  }
  return nullptr;
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
    case Kind::kInt:
      return int_ != 0;
    case Kind::kFloat:
      return float_ != 0;
    case Kind::kString:
      return !str_.empty();
    case Kind::kList:
      return is_iterator() || !list_->empty();
    case Kind::kDict:
      return !dict_->empty();
    case Kind::kNamespace:
    case Kind::kCallable:
      return true;
  }
  return false;
}

std::string float_repr(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), f, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  const size_t e = sci.find('e');
  std::string digits = sci.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exp10 = std::stoi(sci.substr(e + 1));
  const int decpt = exp10 + 1;
  const int n = static_cast<int>(digits.size());
  // Python's repr switches to exponent notation outside 1e-4 <= |f| < 1e16.
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) return sign + "0." + std::string(-decpt, '0') + digits;
    if (decpt >= n) return sign + digits + std::string(decpt - n, '0') + ".0";
    return sign + digits.substr(0, decpt) + "." + digits.substr(decpt);
  }
  std::string out = sign + digits.substr(0, 1);
  if (n > 1) out += "." + digits.substr(1);
  char ebuf[16];
  std::snprintf(ebuf, sizeof(ebuf), "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
  return out + ebuf;
}

std::string string_repr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == quote || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
  return out;
}

std::string Value::str() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "";
    case Kind::kString:
      return str_;
    default:
      return repr();
  }
}

std::string Value::repr() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return int_ ? "True" : "False";
    case Kind::kInt:
      return std::to_string(int_);
    case Kind::kFloat:
      return float_repr(float_);
    case Kind::kString:
      return string_repr(str_);
    case Kind::kList: {
      if (is_iterator()) return "<generator object>";
      const bool tuple = is_tuple();
      std::string out = tuple ? "(" : "[";
      for (size_t i = 0; i < list_->size(); ++i) {
        if (i) out += ", ";
        out += (*list_)[i].repr();
      }
      if (tuple && list_->size() == 1) out += ",";
      return out + (tuple ? ")" : "]");
    }
    case Kind::kDict: {
      std::string out = "{";
      for (size_t i = 0; i < dict_->size(); ++i) {
        if (i) out += ", ";
        out += string_repr((*dict_)[i].first) + ": " + (*dict_)[i].second.repr();
      }
      return out + "}";
    }
    case Kind::kNamespace:
      // Not its attributes: a namespace may hold itself.
      return "<Namespace>";
    case Kind::kCallable:
      return "<function>";
  }
  return "";
}

bool Value::equals(const Value& other) const {
  if (is_number() || kind_ == Kind::kBool) {
    if (!other.is_number() && other.kind_ != Kind::kBool) return false;
    if (kind_ == Kind::kFloat || other.kind_ == Kind::kFloat) {
      return as_double() == other.as_double();
    }
    return int_ == other.int_;
  }
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kString:
      return str_ == other.str_;
    case Kind::kList:
      if (is_iterator() || other.is_iterator()) return list_ == other.list_;
      if (list_->size() != other.list_->size()) return false;
      for (size_t i = 0; i < list_->size(); ++i) {
        if (!(*list_)[i].equals((*other.list_)[i])) return false;
      }
      return true;
    case Kind::kDict:
      if (dict_->size() != other.dict_->size()) return false;
      for (const auto& [k, v] : *dict_) {
        const Value* o = other.find(k);
        if (o == nullptr || !v.equals(*o)) return false;
      }
      return true;
    case Kind::kNamespace:
    case Kind::kCallable:
      return dict_ == other.dict_ && fn_ == other.fn_;
    default:
      return false;
  }
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return is_iterator() ? "generator" : is_tuple() ? "tuple" : "list";
    case Kind::kDict:
      return "dict";
    case Kind::kNamespace:
      return "Namespace";
    case Kind::kCallable:
      return "function";
  }
  return "";
}

Value CallArgs::get(size_t pos, const std::string& name, Value fallback) const {
  for (const auto& [k, v] : kwargs) {
    if (k == name) return v;
  }
  if (pos < args.size()) return args[pos];
  return fallback;
}

}  // namespace strata::model::jinja
