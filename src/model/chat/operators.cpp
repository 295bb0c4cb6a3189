// Binary operators with Python's semantics (jinja2 evaluates them in Python).
#include <cmath>

#include "model/chat/builtins.h"

namespace strata::model::jinja {
namespace {

// Bytes or items `*` may build: far beyond any prompt, short of exhausting memory.
constexpr uint64_t kMaxRepeat = uint64_t{1} << 26;

bool numeric(const Value& v) {
  return v.is_number() || v.kind() == Value::Kind::kBool;
}
bool integral(const Value& v) {
  return v.kind() == Value::Kind::kInt || v.kind() == Value::Kind::kBool;
}

Status type_error(const std::string& op, const Value& a, const Value& b) {
  return error(ErrorCode::kInvalidArgument, "unsupported operand type(s) for " + op + ": '" +
                                                a.type_name() + "' and '" + b.type_name() + "'");
}

// -1, 0 or 1; kInvalidArgument where Python would raise TypeError.
Result<int> compare(const Value& a, const Value& b, const std::string& op) {
  if (numeric(a) && numeric(b)) {
    if (integral(a) && integral(b)) return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int();
    return a.as_double() < b.as_double() ? -1 : a.as_double() > b.as_double();
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : c > 0;
  }
  if (a.is_list() && b.is_list()) {
    const ValueList& x = a.list();
    const ValueList& y = b.list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (x[i].equals(y[i])) continue;
      return compare(x[i], y[i], op);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size();
  }
  return error(ErrorCode::kInvalidArgument, "'" + op + "' not supported between instances of '" +
                                                a.type_name() + "' and '" + b.type_name() + "'");
}

Status int_overflow() {
  return error(ErrorCode::kUnsupported,
               "unsupported integer result beyond 64 bits (Python's ints are unbounded)");
}

Result<Value> repeat(const Value& seq, int64_t n) {
  const size_t unit = seq.is_string() ? seq.as_string().size() : seq.list().size();
  if (n > 0 && unit > 0 && static_cast<uint64_t>(n) > kMaxRepeat / unit) {
    return error(ErrorCode::kOutOfRange, "repetition result too large");
  }
  if (seq.is_string()) {
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += seq.as_string();
    return Value(std::move(out));
  }
  ValueList out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.list().begin(), seq.list().end());
  return Value(std::move(out));
}

Result<Value> arithmetic(const std::string& op, const Value& a, const Value& b) {
  if (op == "+") {
    if (a.is_markup() || b.is_markup()) {
      if (a.is_string() && b.is_string()) {
        return Value::markup((a.is_markup() ? a.as_string() : escape_html(a.as_string())) +
                             (b.is_markup() ? b.as_string() : escape_html(b.as_string())));
      }
    }
    if (a.is_string() && b.is_string()) return Value(a.as_string() + b.as_string());
    if (a.is_list() && b.is_list() && !a.is_iterator() && !b.is_iterator()) {
      ValueList out = a.list();
      out.insert(out.end(), b.list().begin(), b.list().end());
      return Value(std::move(out), a.is_tuple());
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_list()) && integral(b)) return repeat(a, b.as_int());
    if (integral(a) && (b.is_string() || b.is_list())) return repeat(b, a.as_int());
  }
  if (op == "%" && a.is_string()) {
    return error(ErrorCode::kUnsupported,
                 "unsupported operator '%' on strings (printf-style formatting)");
  }
  if (!numeric(a) || !numeric(b)) return type_error(op, a, b);
  const bool ints = integral(a) && integral(b);
  const int64_t x = a.as_int(), y = b.as_int();
  const double fx = a.as_double(), fy = b.as_double();
  int64_t r = 0;
  if (op == "+") {
    if (!ints) return Value(fx + fy);
    if (__builtin_add_overflow(x, y, &r)) return int_overflow();
    return Value(r);
  }
  if (op == "-") {
    if (!ints) return Value(fx - fy);
    if (__builtin_sub_overflow(x, y, &r)) return int_overflow();
    return Value(r);
  }
  if (op == "*") {
    if (!ints) return Value(fx * fy);
    if (__builtin_mul_overflow(x, y, &r)) return int_overflow();
    return Value(r);
  }
  if ((op == "/" || op == "//" || op == "%") && (ints ? y == 0 : fy == 0)) {
    return error(ErrorCode::kInvalidArgument, "division by zero");
  }
  if (op == "/") return Value(fx / fy);
  if (op == "//") {
    if (ints) {
      if (x == INT64_MIN && y == -1) return int_overflow();
      int64_t q = x / y;
      if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
      return Value(q);
    }
    return Value(std::floor(fx / fy));
  }
  if (op == "%") {
    if (ints) {
      if (y == -1) return Value(int64_t{0});
      int64_t rem = x % y;
      if (rem != 0 && ((rem < 0) != (y < 0))) rem += y;
      return Value(rem);
    }
    double rem = std::fmod(fx, fy);
    if (rem != 0 && ((rem < 0) != (fy < 0))) rem += fy;
    return Value(rem);
  }
  if (op == "**") {
    if (ints && y >= 0) {
      // Square and multiply: a huge exponent of 0, 1 or -1 must not loop for ever.
      int64_t result = 1, base = x;
      for (int64_t e = y; e > 0; e >>= 1) {
        if ((e & 1) && __builtin_mul_overflow(result, base, &result)) return int_overflow();
        if (e > 1 && __builtin_mul_overflow(base, base, &base)) return int_overflow();
      }
      return Value(result);
    }
    return Value(std::pow(fx, fy));
  }
  return error(ErrorCode::kInternal, "unknown operator '" + op + "'");
}

Result<bool> contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined:
      return false;
    case Value::Kind::kString:
      if (!item.is_string()) {
        return error(ErrorCode::kInvalidArgument,
                     "'in <string>' requires string as left operand, not " + item.type_name());
      }
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& v : container.list()) {
        if (v.equals(item)) return true;
      }
      return false;
    case Value::Kind::kDict:
      return item.is_string() && container.find(item.as_string()) != nullptr;
    default:
      return error(ErrorCode::kInvalidArgument,
                   "argument of type '" + container.type_name() + "' is not iterable");
  }
}

}  // namespace

Result<Value> binary_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return Value(a.equals(b));
  if (op == "!=") return Value(!a.equals(b));
  if (op == "~") return Value(a.str() + b.str());
  if (op == "in" || op == "not in") {
    Result<bool> r = contains(b, a);
    if (!r.ok()) return r.status();
    return Value(op == "in" ? *r : !*r);
  }
  if (a.is_undefined()) return undefined_error(a);
  if (b.is_undefined()) return undefined_error(b);
  if (op == "<" || op == "<=" || op == ">" || op == ">=") {
    Result<int> c = compare(a, b, op);
    if (!c.ok()) return c.status();
    if (op == "<") return Value(*c < 0);
    if (op == "<=") return Value(*c <= 0);
    if (op == ">") return Value(*c > 0);
    return Value(*c >= 0);
  }
  return arithmetic(op, a, b);
}

}  // namespace strata::model::jinja
