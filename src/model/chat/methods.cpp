// Methods of strings and dicts, as Python defines them. Lists have none here: the sandbox HF
// renders in forbids the mutating ones and templates use no others.
#include <set>

#include "model/chat/builtins.h"
#include "model/chat/pystr.h"

namespace strata::model::jinja {
namespace {

const std::set<std::string> kStringMethods = {
    "strip", "lstrip",     "rstrip",  "split",      "rsplit",  "startswith", "endswith",
    "upper", "lower",      "title",   "capitalize", "replace", "find",       "count",
    "join",  "splitlines", "isdigit", "isalpha",    "isspace", "isupper",    "islower"};
const std::set<std::string> kDictMethods = {"items", "keys", "values", "get"};

Status bad_arg(const std::string& method, const std::string& want) {
  return error(ErrorCode::kInvalidArgument, method + "() argument must be " + want);
}

Result<std::string> opt_chars(const CallArgs& args, const std::string& method) {
  const Value v = args.get(0, "chars");
  if (v.is_undefined() || v.is_none()) return std::string();
  if (!v.is_string()) return bad_arg(method, "str or None");
  return v.as_string();
}

bool all_of(const std::string& s, int (*pred)(int)) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    if (!pred(c)) return false;
  }
  return true;
}

Result<Value> string_method(const std::string& s, const std::string& name, const CallArgs& args) {
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    Result<std::string> chars = opt_chars(args, name);
    if (!chars.ok()) return chars.status();
    return Value(pystr::strip(s, *chars, name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    const Value sep = args.get(0, "sep");
    const Value maxsplit = args.get(1, "maxsplit", Value(-1));
    const bool has_sep = !sep.is_undefined() && !sep.is_none();
    if (has_sep && (!sep.is_string() || sep.as_string().empty())) {
      return bad_arg(name, "a non-empty str or None");
    }
    if (name == "rsplit" && maxsplit.as_int() >= 0) {
      return error(ErrorCode::kUnsupported, "unsupported method 'rsplit' with maxsplit");
    }
    ValueList parts;
    for (std::string& p : pystr::split(s, has_sep, has_sep ? sep.as_string() : "",
                                       static_cast<long>(maxsplit.as_int()))) {
      parts.emplace_back(std::move(p));
    }
    return Value(std::move(parts));
  }
  if (name == "startswith" || name == "endswith") {
    const Value arg = args.get(0, "prefix");
    ValueList candidates;
    if (arg.is_string()) {
      candidates.push_back(arg);
    } else if (arg.is_list()) {
      candidates = arg.list();
    } else {
      return bad_arg(name, "str or a tuple of str");
    }
    for (const Value& c : candidates) {
      if (!c.is_string()) return bad_arg(name, "str or a tuple of str");
      const std::string& p = c.as_string();
      if (p.size() > s.size()) continue;
      if (name == "startswith" ? s.compare(0, p.size(), p) == 0
                               : s.compare(s.size() - p.size(), p.size(), p) == 0) {
        return Value(true);
      }
    }
    return Value(false);
  }
  if (name == "upper") return Value(pystr::upper(s));
  if (name == "lower") return Value(pystr::lower(s));
  if (name == "title") return Value(pystr::title(s));
  if (name == "capitalize") return Value(pystr::capitalize(s));
  if (name == "replace") {
    const Value from = args.get(0, "old"), to = args.get(1, "new");
    const Value count = args.get(2, "count", Value(-1));
    if (!from.is_string() || !to.is_string()) return bad_arg(name, "str");
    return Value(
        pystr::replace(s, from.as_string(), to.as_string(), static_cast<long>(count.as_int())));
  }
  if (name == "find" || name == "count") {
    const Value sub = args.get(0, "sub");
    if (!sub.is_string()) return bad_arg(name, "str");
    if (name == "find") {
      const size_t hit = s.find(sub.as_string());
      if (hit == std::string::npos) return Value(-1);
      return Value(static_cast<int64_t>(utf8_chars(s.substr(0, hit)).size()));
    }
    if (sub.as_string().empty()) return Value(static_cast<int64_t>(utf8_chars(s).size() + 1));
    int64_t n = 0;
    for (size_t p = s.find(sub.as_string()); p != std::string::npos;
         p = s.find(sub.as_string(), p + sub.as_string().size())) {
      ++n;
    }
    return Value(n);
  }
  if (name == "join") {
    Result<ValueList> items = iterate(args.get(0, "iterable"));
    if (!items.ok()) return items.status();
    std::string out;
    for (size_t i = 0; i < items->size(); ++i) {
      if (!(*items)[i].is_string()) return bad_arg(name, "an iterable of str");
      if (i) out += s;
      out += (*items)[i].as_string();
    }
    return Value(std::move(out));
  }
  if (name == "splitlines") {
    ValueList lines;
    for (std::string& l : pystr::splitlines(s)) lines.emplace_back(std::move(l));
    return Value(std::move(lines));
  }
  if (name == "isdigit") return Value(all_of(s, isdigit));
  if (name == "isalpha") return Value(all_of(s, isalpha));
  if (name == "isspace") return Value(all_of(s, isspace));
  if (name == "isupper") return Value(pystr::upper(s) == s && pystr::lower(s) != s);
  return Value(pystr::lower(s) == s && pystr::upper(s) != s);  // islower
}

Result<Value> dict_method(const Value& d, const std::string& name, const CallArgs& args) {
  if (name == "get") {
    if (const Value* v = d.find(args.get(0, "key").as_string());
        v && args.get(0, "key").is_string()) {
      return *v;
    }
    return args.get(1, "default", Value::none());
  }
  ValueList out;
  for (const auto& [k, v] : d.dict()) {
    if (name == "items") {
      out.emplace_back(ValueList{Value(k), v}, /*tuple=*/true);
    } else if (name == "keys") {
      out.emplace_back(k);
    } else {
      out.push_back(v);
    }
  }
  return Value(std::move(out));
}

}  // namespace

bool has_method(const Value& obj, const std::string& name) {
  if (obj.is_string()) return kStringMethods.count(name) != 0;
  if (obj.is_dict()) return kDictMethods.count(name) != 0;
  return false;
}

Result<Value> call_method(const Value& obj, const std::string& name, const CallArgs& args) {
  if (obj.is_string()) return string_method(obj.as_string(), name, args);
  return dict_method(obj, name, args);
}

}  // namespace strata::model::jinja
