// jinja2's filters, as jinja2 3.1 defines them, plus `tojson` as HF's chat-template
// environment overrides it (json.dumps without HTML escaping).
#include <algorithm>
#include <cmath>

#include "model/chat/builtins.h"
#include "model/chat/json.h"
#include "model/chat/pystr.h"

namespace strata::model::jinja {
namespace {

Status bad_input(const std::string& filter, const Value& v) {
  return error(ErrorCode::kInvalidArgument,
               "filter '" + filter + "' cannot take a value of type " + v.type_name());
}

// jinja2's make_attrgetter: "a.b.0" looks up each dotted part as an item.
Result<Value> attr_path(const Value& item, const std::string& path) {
  Value cur = item;
  size_t pos = 0;
  for (;;) {
    const size_t dot = path.find('.', pos);
    const std::string part =
        path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    Value key(part);
    if (!part.empty() && std::all_of(part.begin(), part.end(), ::isdigit)) {
      key = Value(static_cast<int64_t>(std::stoll(part)));
    }
    Result<Value> next = get_item(cur, key);
    if (!next.ok()) return next;
    cur = std::move(*next);
    if (dot == std::string::npos) return cur;
    pos = dot + 1;
  }
}

// select/reject/selectattr/rejectattr: `args` after the attribute are (test name, test args).
Result<Value> select(const Value& seq, const CallArgs& args, bool by_attr, bool keep) {
  // jinja2 walks the input only when it is true, so None selects nothing.
  Result<ValueList> items = seq.truthy() ? iterate(seq) : Result<ValueList>(ValueList{});
  if (!items.ok()) return items.status();
  size_t next = 0;
  std::string attribute;
  if (by_attr) {
    if (args.args.empty() || !args.args[0].is_string()) {
      return error(ErrorCode::kInvalidArgument, "selectattr/rejectattr need an attribute name");
    }
    attribute = args.args[next++].as_string();
  }
  std::string test;
  if (next < args.args.size()) {
    if (!args.args[next].is_string()) {
      return error(ErrorCode::kInvalidArgument, "select/reject need a test name");
    }
    test = args.args[next++].as_string();
  }
  CallArgs test_args;
  test_args.args.assign(args.args.begin() + static_cast<std::ptrdiff_t>(next), args.args.end());
  ValueList out;
  for (const Value& item : *items) {
    Value subject = item;
    if (by_attr) {
      Result<Value> a = attr_path(item, attribute);
      if (!a.ok()) return a;
      subject = std::move(*a);
    }
    bool pass = subject.truthy();
    if (!test.empty()) {
      Result<bool> r = apply_test(test, subject, test_args);
      if (!r.ok()) return r.status();
      pass = *r;
    }
    if (pass == keep) out.push_back(item);
  }
  return Value::iterator(std::move(out));
}

Result<Value> map(const Value& seq, const CallArgs& args) {
  Result<ValueList> items = seq.truthy() ? iterate(seq) : Result<ValueList>(ValueList{});
  if (!items.ok()) return items.status();
  const Value attribute = args.get(99, "attribute");
  ValueList out;
  if (attribute.is_string()) {
    const Value fallback = args.get(99, "default");
    for (const Value& item : *items) {
      Result<Value> a = attr_path(item, attribute.as_string());
      if (!a.ok()) return a;
      out.push_back(a->is_undefined() && !fallback.is_undefined() ? fallback : *a);
    }
    return Value::iterator(std::move(out));
  }
  if (args.args.empty() || !args.args[0].is_string()) {
    return error(ErrorCode::kInvalidArgument, "map needs a filter name or attribute=");
  }
  CallArgs rest;
  rest.args.assign(args.args.begin() + 1, args.args.end());
  rest.kwargs = args.kwargs;
  for (const Value& item : *items) {
    Result<Value> r = apply_filter(args.args[0].as_string(), item, rest);
    if (!r.ok()) return r;
    out.push_back(std::move(*r));
  }
  return Value::iterator(std::move(out));
}

Result<Value> indent(const std::string& s, const CallArgs& args) {
  const Value width = args.get(0, "width", Value(4));
  if (!width.is_string() && width.as_int() > (1 << 16)) {
    return error(ErrorCode::kOutOfRange, "indent width too large");
  }
  const std::string pad =
      width.is_string()
          ? width.as_string()
          : std::string(static_cast<size_t>(std::max<int64_t>(0, width.as_int())), ' ');
  const bool first = args.get(1, "first", Value(false)).truthy();
  const bool blank = args.get(2, "blank", Value(false)).truthy();
  // jinja2 appends a newline so splitlines() keeps a trailing empty line.
  std::vector<std::string> lines = pystr::splitlines(s + "\n");
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      out += "\n";
      if (blank || !lines[i].empty()) out += pad;
    }
    out += lines[i];
  }
  return Value(first ? pad + out : out);
}

Result<Value> tojson(const Value& v, const CallArgs& args) {
  if (args.get(0, "ensure_ascii", Value(false)).truthy()) {
    return error(ErrorCode::kUnsupported, "unsupported tojson argument ensure_ascii=True");
  }
  const Value separators = args.get(2, "separators", Value::none());
  if (!separators.is_none()) {
    return error(ErrorCode::kUnsupported, "unsupported tojson argument separators");
  }
  const Value ind = args.get(1, "indent", Value::none());
  if (!ind.is_none() && ind.kind() != Value::Kind::kInt) {
    return error(ErrorCode::kUnsupported, "unsupported tojson indent of type " + ind.type_name());
  }
  Result<std::string> s = to_json(v, ind.is_none() ? -1 : static_cast<int>(ind.as_int()),
                                  args.get(3, "sort_keys", Value(false)).truthy());
  if (!s.ok()) return s.status();
  return Value(std::move(*s));
}

// jinja2's sort and unique compare strings case-insensitively unless told otherwise.
Value sort_key(const Value& v, bool case_sensitive) {
  return v.is_string() && !case_sensitive ? Value(pystr::lower(v.as_string())) : v;
}

Result<Value> sort(const Value& seq, const CallArgs& args) {
  Result<ValueList> items = iterate(seq);
  if (!items.ok()) return items.status();
  const bool reverse = args.get(0, "reverse", Value(false)).truthy();
  const bool cs = args.get(1, "case_sensitive", Value(false)).truthy();
  const Value attribute = args.get(2, "attribute");
  std::vector<std::pair<Value, Value>> keyed;
  for (const Value& item : *items) {
    Value key = item;
    if (attribute.is_string()) {
      Result<Value> a = attr_path(item, attribute.as_string());
      if (!a.ok()) return a;
      key = *a;
    }
    keyed.emplace_back(sort_key(key, cs), item);
  }
  Status failure;
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    Result<Value> lt = binary_op("<", reverse ? b.first : a.first, reverse ? a.first : b.first);
    if (!lt.ok()) {
      failure = lt.status();
      return false;
    }
    return lt->as_bool();
  });
  if (!failure.ok()) return failure;
  ValueList out;
  for (auto& [k, v] : keyed) out.push_back(std::move(v));
  return Value(std::move(out));
}

Result<Value> length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return Value(0);
    case Value::Kind::kString:
      return Value(static_cast<int64_t>(utf8_chars(v.as_string()).size()));
    case Value::Kind::kList:
      if (v.is_iterator()) break;
      return Value(static_cast<int64_t>(v.list().size()));
    case Value::Kind::kDict:
      return Value(static_cast<int64_t>(v.dict().size()));
    default:
      break;
  }
  return error(ErrorCode::kInvalidArgument, "object of type '" + v.type_name() + "' has no len()");
}

}  // namespace

std::string escape_html(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

Result<Value> apply_filter(const std::string& name, const Value& v, const CallArgs& args) {
  if (name == "safe") return v.is_markup() ? v : Value::markup(v.str());
  if (name == "string") return Value(v.str());
  if (name == "length" || name == "count") return length(v);
  if (name == "tojson") return tojson(v, args);
  if (name == "default" || name == "d") {
    const bool boolean = args.get(1, "boolean", Value(false)).truthy();
    if (v.is_undefined() || (boolean && !v.truthy()))
      return args.get(0, "default_value", Value(""));
    return v;
  }
  if (name == "trim") {
    const Value chars = args.get(0, "chars", Value::none());
    return Value(pystr::strip(v.str(), chars.is_string() ? chars.as_string() : "", true, true));
  }
  if (name == "upper") return Value(pystr::upper(v.str()));
  if (name == "lower") return Value(pystr::lower(v.str()));
  if (name == "capitalize") return Value(pystr::capitalize(v.str()));
  if (name == "title") return Value(pystr::title(v.str()));
  if (name == "escape" || name == "e") {
    return v.is_markup() ? v : Value::markup(escape_html(v.str()));
  }
  if (name == "indent") return indent(v.str(), args);
  if (name == "replace") {
    const Value from = args.get(0, "old"), to = args.get(1, "new");
    const Value count = args.get(2, "count", Value::none());
    return Value(pystr::replace(v.str(), from.str(), to.str(),
                                count.is_none() ? -1 : static_cast<long>(count.as_int())));
  }
  if (name == "join") {
    Result<ValueList> items = iterate(v);
    if (!items.ok()) return items.status();
    const Value attribute = args.get(1, "attribute");
    std::string out;
    for (size_t i = 0; i < items->size(); ++i) {
      if (i) out += args.get(0, "d", Value("")).str();
      Value item = (*items)[i];
      if (attribute.is_string()) {
        Result<Value> a = attr_path(item, attribute.as_string());
        if (!a.ok()) return a;
        item = *a;
      }
      out += item.str();
    }
    return Value(std::move(out));
  }
  if (name == "first" || name == "last") {
    Result<ValueList> items = iterate(v);
    if (!items.ok()) return items.status();
    if (items->empty()) return Value::undefined("No " + name + " item, sequence was empty.");
    return name == "first" ? items->front() : items->back();
  }
  if (name == "list") {
    Result<ValueList> items = iterate(v);
    if (!items.ok()) return items.status();
    return Value(std::move(*items));
  }
  if (name == "reverse") {
    if (v.is_string()) {
      std::vector<std::string> chars = utf8_chars(v.as_string());
      std::string out;
      for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += *it;
      return Value(std::move(out));
    }
    Result<ValueList> items = iterate(v);
    if (!items.ok()) return items.status();
    std::reverse(items->begin(), items->end());
    return Value::iterator(std::move(*items));
  }
  if (name == "items") {
    if (v.is_undefined()) return Value::iterator({});
    if (!v.is_dict()) return bad_input(name, v);
    ValueList out;
    for (const auto& [k, val] : v.dict()) out.emplace_back(ValueList{Value(k), val}, true);
    return Value::iterator(std::move(out));
  }
  if (name == "select" || name == "reject") return select(v, args, false, name == "select");
  if (name == "selectattr" || name == "rejectattr") {
    return select(v, args, true, name == "selectattr");
  }
  if (name == "map") return map(v, args);
  if (name == "sort") return sort(v, args);
  if (name == "unique") {
    Result<ValueList> items = iterate(v);
    if (!items.ok()) return items.status();
    const bool cs = args.get(0, "case_sensitive", Value(false)).truthy();
    ValueList out, seen;
    for (const Value& item : *items) {
      const Value key = sort_key(item, cs);
      if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return s.equals(key); }))
        continue;
      seen.push_back(key);
      out.push_back(item);
    }
    return Value::iterator(std::move(out));
  }
  if (name == "int") {
    if (v.kind() == Value::Kind::kInt || v.kind() == Value::Kind::kBool) return Value(v.as_int());
    if (v.kind() == Value::Kind::kFloat) return Value(static_cast<int64_t>(v.as_double()));
    if (v.is_string()) {
      try {
        size_t used = 0;
        const std::string t = pystr::strip(v.as_string(), "", true, true);
        const long long i = std::stoll(t, &used);
        if (used == t.size()) return Value(static_cast<int64_t>(i));
        return Value(static_cast<int64_t>(std::stod(t)));
      } catch (...) {
      }
    }
    return args.get(0, "default", Value(0));
  }
  if (name == "float") {
    if (v.is_number() || v.kind() == Value::Kind::kBool) return Value(v.as_double());
    if (v.is_string()) {
      try {
        return Value(std::stod(v.as_string()));
      } catch (...) {
      }
    }
    return args.get(0, "default", Value(0.0));
  }
  if (name == "abs") {
    if (v.kind() == Value::Kind::kFloat) return Value(std::fabs(v.as_double()));
    if (v.kind() == Value::Kind::kInt || v.kind() == Value::Kind::kBool) {
      if (v.as_int() == INT64_MIN) return error(ErrorCode::kUnsupported, "integer beyond 64 bits");
      return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
    }
    return bad_input(name, v);
  }
  if (name == "round") {
    if (!v.is_number() && v.kind() != Value::Kind::kBool) return bad_input(name, v);
    const int64_t precision = args.get(0, "precision", Value(0)).as_int();
    const std::string method = args.get(1, "method", Value("common")).str();
    const double scale = std::pow(10.0, static_cast<double>(precision));
    const double x = v.as_double() * scale;
    double r = method == "floor" ? std::floor(x) : method == "ceil" ? std::ceil(x) : std::round(x);
    return Value(r / scale);
  }
  if (name == "min" || name == "max" || name == "sum") {
    Result<ValueList> items = iterate(v);
    if (!items.ok()) return items.status();
    if (name == "sum") {
      Value total = args.get(1, "start", Value(0));
      for (const Value& item : *items) {
        Result<Value> r = binary_op("+", total, item);
        if (!r.ok()) return r;
        total = *r;
      }
      return total;
    }
    if (items->empty()) return Value::undefined("No " + name + " item, sequence was empty.");
    Value best = items->front();
    for (const Value& item : *items) {
      Result<Value> lt = binary_op("<", sort_key(item, false), sort_key(best, false));
      if (!lt.ok()) return lt;
      if (lt->as_bool() == (name == "min") && !item.equals(best)) best = item;
    }
    return best;
  }
  return error(ErrorCode::kUnsupported, "unsupported filter '" + name + "'");
}

}  // namespace strata::model::jinja
