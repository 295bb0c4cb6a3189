// jinja2's tests (`x is defined`, `x is string`, ...), with its definitions of each.
#include "model/chat/builtins.h"

namespace strata::model::jinja {

Result<bool> apply_test(const std::string& name, const Value& v, const CallArgs& args) {
  using K = Value::Kind;
  const K k = v.kind();
  if (name == "defined") return k != K::kUndefined;
  if (name == "undefined") return k == K::kUndefined;
  if (name == "none") return k == K::kNone;
  if (name == "string") return k == K::kString;
  if (name == "number") return k == K::kInt || k == K::kFloat || k == K::kBool;
  if (name == "integer") return k == K::kInt;
  if (name == "float") return k == K::kFloat;
  if (name == "boolean") return k == K::kBool;
  if (name == "true") return k == K::kBool && v.as_bool();
  if (name == "false") return k == K::kBool && !v.as_bool();
  if (name == "mapping") return k == K::kDict;
  // Undefined iterates as empty in jinja2, so it counts as iterable.
  if (name == "iterable")
    return k == K::kList || k == K::kDict || k == K::kString || k == K::kUndefined;
  if (name == "sequence") return k == K::kList || k == K::kDict || k == K::kString;
  if (name == "callable") return k == K::kCallable;
  if (name == "lower" || name == "upper") {
    if (!v.is_string()) return false;
    Result<Value> r = call_method(v, name == "lower" ? "islower" : "isupper", args);
    if (!r.ok()) return r.status();
    return r->as_bool();
  }
  if (name == "odd" || name == "even" || name == "divisibleby") {
    if (k != K::kInt && k != K::kBool) {
      return error(ErrorCode::kInvalidArgument, "test '" + name + "' needs an integer");
    }
    const int64_t x = v.as_int();
    if (name == "odd") return x % 2 != 0;
    if (name == "even") return x % 2 == 0;
    const Value d = args.get(0, "num");
    if (d.kind() != K::kInt || d.as_int() == 0) {
      return error(ErrorCode::kInvalidArgument, "divisibleby needs a non-zero integer");
    }
    return x % d.as_int() == 0;
  }
  if (name == "sameas") {
    const Value other = args.get(0, "other");
    if (k == K::kNone || k == K::kBool) return v.kind() == other.kind() && v.equals(other);
    return v.kind() == other.kind() && v.equals(other) && !v.is_list() && !v.is_dict();
  }
  static const std::pair<const char*, const char*> kCompare[] = {
      {"eq", "=="}, {"equalto", "=="}, {"==", "=="},      {"ne", "!="},
      {"!=", "!="}, {"lt", "<"},       {"lessthan", "<"}, {"<", "<"},
      {"le", "<="}, {"<=", "<="},      {"gt", ">"},       {"greaterthan", ">"},
      {">", ">"},   {"ge", ">="},      {">=", ">="},      {"in", "in"}};
  for (const auto& [test, op] : kCompare) {
    if (name != test) continue;
    Result<Value> r = binary_op(op, v, args.get(0, "other"));
    if (!r.ok()) return r.status();
    return r->truthy();
  }
  return error(ErrorCode::kUnsupported, "unsupported test '" + name + "'");
}

}  // namespace strata::model::jinja
