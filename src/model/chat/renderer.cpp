#include "model/chat/renderer.h"

#include <ctime>
#include <unordered_map>

#include "model/chat/builtins.h"
#include "model/chat/parser.h"

namespace strata::model::jinja {
namespace {

constexpr const char* kPrefix = "chat template: ";
// Deeper macro recursion than any chat template needs (they recurse along a JSON schema),
// well short of the native stack.
constexpr int kMaxCallDepth = 64;
// jinja2's sandbox refuses ranges longer than this.
constexpr int64_t kMaxRange = 100000;

// Variables of one scope. Loops give each iteration a fresh frame, so a `set` inside a loop
// body does not outlive the iteration, as in jinja2; `if` shares its enclosing frame.
struct Frame {
  std::unordered_map<std::string, Value> vars;
  const Frame* parent = nullptr;

  const Value* lookup(const std::string& name) const {
    for (const Frame* f = this; f != nullptr; f = f->parent) {
      auto it = f->vars.find(name);
      if (it != f->vars.end()) return &it->second;
    }
    return nullptr;
  }
};

Status at_line(const Status& s, int line) {
  if (s.ok() || s.message().rfind(kPrefix, 0) == 0) return s;
  return error(s.code(), kPrefix + s.message() + " at line " + std::to_string(line));
}

Result<Value> global_namespace(CallArgs& a) {
  ValueDict items;
  if (!a.args.empty()) {
    if (!a.args[0].is_dict() || a.args.size() > 1) {
      return error(ErrorCode::kInvalidArgument, "namespace() takes a dict and keyword arguments");
    }
    items = a.args[0].dict();
  }
  for (auto& [k, v] : a.kwargs) {
    bool replaced = false;
    for (auto& entry : items) {
      if (entry.first == k) {
        entry.second = v;
        replaced = true;
      }
    }
    if (!replaced) items.emplace_back(k, v);
  }
  return Value::make_namespace(std::move(items));
}

Result<Value> global_range(CallArgs& a) {
  for (const Value& v : a.args) {
    if (v.kind() != Value::Kind::kInt && v.kind() != Value::Kind::kBool) {
      return error(ErrorCode::kInvalidArgument, "range() takes integers");
    }
  }
  int64_t start = 0, stop = 0, step = 1;
  if (a.args.size() == 1) {
    stop = a.args[0].as_int();
  } else if (a.args.size() == 2 || a.args.size() == 3) {
    start = a.args[0].as_int();
    stop = a.args[1].as_int();
    if (a.args.size() == 3) step = a.args[2].as_int();
  } else {
    return error(ErrorCode::kInvalidArgument, "range() takes 1 to 3 arguments");
  }
  if (step == 0) return error(ErrorCode::kInvalidArgument, "range() arg 3 must not be zero");
  ValueList out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
    if (static_cast<int64_t>(out.size()) >= kMaxRange) {
      return error(ErrorCode::kOutOfRange, "range too big");
    }
    out.emplace_back(i);
    if (__builtin_add_overflow(i, step, &i)) break;
  }
  return Value(std::move(out));
}

Result<Value> global_strftime_now(CallArgs& a) {
  const Value fmt = a.get(0, "format");
  if (!fmt.is_string()) return error(ErrorCode::kInvalidArgument, "strftime_now() needs a format");
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[256];
  const size_t n = std::strftime(buf, sizeof(buf), fmt.as_string().c_str(), &local);
  return Value(std::string(buf, n));
}

class Renderer {
 public:
  explicit Renderer(const ValueDict& variables) {
    globals_.vars["raise_exception"] = Value::function([](CallArgs& a) -> Result<Value> {
      return error(ErrorCode::kInvalidArgument, "raise_exception: " + a.get(0, "message").str());
    });
    globals_.vars["strftime_now"] = Value::function(global_strftime_now);
    globals_.vars["namespace"] = Value::function([this](CallArgs& a) -> Result<Value> {
      Result<Value> ns = global_namespace(a);
      if (ns.ok()) namespaces_.push_back(*ns);
      return ns;
    });
    globals_.vars["range"] = Value::function(global_range);
    globals_.vars["dict"] = Value::function([](CallArgs& a) -> Result<Value> {
      ValueDict items;
      for (auto& [k, v] : a.kwargs) items.emplace_back(k, v);
      return Value(std::move(items));
    });
    for (const auto& [k, v] : variables) globals_.vars[k] = v;
    root_.parent = &globals_;
  }

  // Namespaces may hold one another (or themselves); emptying them frees such cycles, and
  // no value outlives the render.
  ~Renderer() {
    for (const Value& ns : namespaces_) ns.namespace_items().clear();
  }
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  Result<std::string> run(const Body& body) {
    std::string out;
    STRATA_RETURN_IF_ERROR(render_body(body, root_, out));
    return out;
  }

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Status render_body(const Body& body, Frame& frame, std::string& out) {
    for (const NodePtr& node : body) {
      STRATA_RETURN_IF_ERROR(render_node(*node, frame, out));
      if (flow_ != Flow::kNormal) break;
    }
    return Status::ok_status();
  }

  Status render_node(const Node& n, Frame& frame, std::string& out) {
    switch (n.kind) {
      case Node::Kind::kText:
        out += n.text;
        return Status::ok_status();
      case Node::Kind::kOutput: {
        Result<Value> v = eval(*n.expr, frame);
        if (!v.ok()) return v.status();
        if (v->is_iterator()) {
          // jinja2 writes "<generator object ... at 0x...>", an address no renderer can match.
          return at_line(error(ErrorCode::kUnsupported, "unsupported output of a generator"),
                         n.line);
        }
        out += v->str();
        return Status::ok_status();
      }
      case Node::Kind::kIf:
        for (size_t i = 0; i < n.bodies.size(); ++i) {
          if (i < n.conditions.size()) {
            Result<Value> c = eval(*n.conditions[i], frame);
            if (!c.ok()) return c.status();
            if (!c->truthy()) continue;
          }
          return render_body(n.bodies[i], frame, out);
        }
        return Status::ok_status();
      case Node::Kind::kFor:
        return render_for(n, frame, out);
      case Node::Kind::kSet: {
        Result<Value> v = eval(*n.expr, frame);
        if (!v.ok()) return v.status();
        return assign(n, std::move(*v), frame);
      }
      case Node::Kind::kSetBlock:
      case Node::Kind::kFilterBlock: {
        std::string body;
        STRATA_RETURN_IF_ERROR(render_body(n.bodies[0], frame, body));
        Value v(std::move(body));
        if (n.expr) {
          Frame inner;
          inner.parent = &frame;
          inner.vars[kFilterBodyName] = std::move(v);
          Result<Value> filtered = eval(*n.expr, inner);
          if (!filtered.ok()) return filtered.status();
          v = std::move(*filtered);
        }
        if (n.kind == Node::Kind::kFilterBlock) {
          out += v.str();
          return Status::ok_status();
        }
        frame.vars[n.targets[0]] = std::move(v);
        return Status::ok_status();
      }
      case Node::Kind::kMacro:
        frame.vars[n.text] = make_macro(n);
        return Status::ok_status();
      case Node::Kind::kBreak:
      case Node::Kind::kContinue:
        if (loop_depth_ == 0) {
          return at_line(error(ErrorCode::kInvalidArgument, "break or continue outside a loop"),
                         n.line);
        }
        flow_ = n.kind == Node::Kind::kBreak ? Flow::kBreak : Flow::kContinue;
        return Status::ok_status();
      case Node::Kind::kPassthrough:
        return render_body(n.bodies[0], frame, out);
    }
    return Status::ok_status();
  }

  Status bind_targets(const std::vector<std::string>& targets, const Value& item, Frame& frame,
                      int line) {
    if (targets.size() == 1) {
      frame.vars[targets[0]] = item;
      return Status::ok_status();
    }
    if (!item.is_list() || item.list().size() != targets.size()) {
      return at_line(
          error(ErrorCode::kInvalidArgument, "cannot unpack " + item.type_name() + " into " +
                                                 std::to_string(targets.size()) + " names"),
          line);
    }
    for (size_t i = 0; i < targets.size(); ++i) frame.vars[targets[i]] = item.list()[i];
    return Status::ok_status();
  }

  Status assign(const Node& n, Value v, Frame& frame) {
    if (!n.text.empty()) {
      const Value* ns = frame.lookup(n.targets[0]);
      if (ns == nullptr || ns->kind() != Value::Kind::kNamespace) {
        return at_line(
            error(ErrorCode::kInvalidArgument,
                  "cannot assign attribute on non-namespace object '" + n.targets[0] + "'"),
            n.line);
      }
      for (auto& entry : ns->namespace_items()) {
        if (entry.first == n.text) {
          entry.second = std::move(v);
          return Status::ok_status();
        }
      }
      ns->namespace_items().emplace_back(n.text, std::move(v));
      return Status::ok_status();
    }
    return bind_targets(n.targets, v, frame, n.line);
  }

  Status render_for(const Node& n, Frame& frame, std::string& out) {
    Result<Value> seq = eval(*n.expr, frame);
    if (!seq.ok()) return seq.status();
    Result<ValueList> all = iterate(*seq);
    if (!all.ok()) return at_line(all.status(), n.line);
    ValueList items;
    for (const Value& item : *all) {
      if (n.filter) {
        Frame f;
        f.parent = &frame;
        STRATA_RETURN_IF_ERROR(bind_targets(n.targets, item, f, n.line));
        Result<Value> keep = eval(*n.filter, f);
        if (!keep.ok()) return keep.status();
        if (!keep->truthy()) continue;
      }
      items.push_back(item);
    }
    const int64_t len = static_cast<int64_t>(items.size());
    ++loop_depth_;
    for (int64_t i = 0; i < len; ++i) {
      Frame f;
      f.parent = &frame;
      STRATA_RETURN_IF_ERROR(bind_targets(n.targets, items[static_cast<size_t>(i)], f, n.line));
      ValueDict loop = {{"index", Value(i + 1)},      {"index0", Value(i)},
                        {"revindex", Value(len - i)}, {"revindex0", Value(len - i - 1)},
                        {"first", Value(i == 0)},     {"last", Value(i == len - 1)},
                        {"length", Value(len)},       {"depth", Value(1)},
                        {"depth0", Value(0)}};
      if (i > 0) loop.emplace_back("previtem", items[static_cast<size_t>(i - 1)]);
      if (i + 1 < len) loop.emplace_back("nextitem", items[static_cast<size_t>(i + 1)]);
      loop.emplace_back("cycle", Value::function([i](CallArgs& a) -> Result<Value> {
                          if (a.args.empty()) {
                            return error(ErrorCode::kInvalidArgument, "no items for cycling given");
                          }
                          return a.args[static_cast<size_t>(i) % a.args.size()];
                        }));
      f.vars["loop"] = Value(std::move(loop));
      const Status s = render_body(n.bodies[0], f, out);
      if (!s.ok()) {
        --loop_depth_;
        return s;
      }
      const Flow flow = flow_;
      flow_ = Flow::kNormal;
      if (flow == Flow::kBreak) break;
    }
    --loop_depth_;
    if (len == 0 && n.bodies.size() > 1) return render_body(n.bodies[1], frame, out);
    return Status::ok_status();
  }

  Value make_macro(const Node& n) {
    const Node* node = &n;
    return Value::function([this, node](CallArgs& a) -> Result<Value> {
      if (depth_ >= kMaxCallDepth) {
        return error(ErrorCode::kOutOfRange, "macro '" + node->text + "' recursed too deeply");
      }
      if (a.args.size() > node->params.size()) {
        return error(ErrorCode::kInvalidArgument,
                     "macro '" + node->text + "' takes not more than " +
                         std::to_string(node->params.size()) + " argument(s)");
      }
      Frame f;
      f.parent = &root_;
      for (const auto& [k, v] : a.kwargs) {
        bool known = false;
        for (const Param& p : node->params) known = known || p.name == k;
        if (!known) {
          return error(ErrorCode::kInvalidArgument,
                       "macro '" + node->text + "' takes no keyword argument '" + k + "'");
        }
      }
      for (size_t i = 0; i < node->params.size(); ++i) {
        const Param& p = node->params[i];
        Value v = a.get(i, p.name);
        bool given = i < a.args.size();
        for (const auto& kw : a.kwargs) given = given || kw.first == p.name;
        if (!given && p.default_value) {
          Result<Value> d = eval(*p.default_value, f);
          if (!d.ok()) return d;
          v = std::move(*d);
        } else if (!given) {
          v = Value::undefined("parameter '" + p.name + "' was not provided");
        }
        f.vars[p.name] = std::move(v);
      }
      std::string out;
      ++depth_;
      const int saved_loops = loop_depth_;
      loop_depth_ = 0;
      const Status s = render_body(node->bodies[0], f, out);
      loop_depth_ = saved_loops;
      --depth_;
      if (!s.ok()) return s;
      return Value(std::move(out));
    });
  }

  Result<CallArgs> eval_args(const Expr& e, size_t first, Frame& frame) {
    CallArgs args;
    for (size_t i = first; i < e.children.size(); ++i) {
      Result<Value> v = eval(*e.children[i], frame);
      if (!v.ok()) return v.status();
      args.args.push_back(std::move(*v));
    }
    for (const auto& [k, x] : e.kwargs) {
      Result<Value> v = eval(*x, frame);
      if (!v.ok()) return v.status();
      args.kwargs.emplace_back(k, std::move(*v));
    }
    return args;
  }

  Result<Value> eval(const Expr& e, Frame& frame) {
    Result<Value> r = eval_inner(e, frame);
    if (!r.ok()) return at_line(r.status(), e.line);
    if (r->depth() > kMaxValueDepth) {
      return at_line(error(ErrorCode::kOutOfRange, "lists or dicts nested too deeply"), e.line);
    }
    return r;
  }

  Result<Value> eval_inner(const Expr& e, Frame& frame) {
    switch (e.kind) {
      case Expr::Kind::kLiteral:
        return e.value;
      case Expr::Kind::kName: {
        if (const Value* v = frame.lookup(e.name)) return *v;
        return Value::undefined("'" + e.name + "' is undefined");
      }
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        ValueList items;
        for (const ExprPtr& c : e.children) {
          Result<Value> v = eval(*c, frame);
          if (!v.ok()) return v;
          items.push_back(std::move(*v));
        }
        return Value(std::move(items), e.kind == Expr::Kind::kTuple);
      }
      case Expr::Kind::kDict: {
        ValueDict items;
        for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
          Result<Value> k = eval(*e.children[i], frame);
          if (!k.ok()) return k;
          if (!k->is_string()) {
            return error(ErrorCode::kUnsupported, "unsupported dict key of type " + k->type_name());
          }
          Result<Value> v = eval(*e.children[i + 1], frame);
          if (!v.ok()) return v;
          bool replaced = false;
          for (auto& entry : items) {
            if (entry.first == k->as_string()) {
              entry.second = *v;
              replaced = true;
            }
          }
          if (!replaced) items.emplace_back(k->as_string(), std::move(*v));
        }
        return Value(std::move(items));
      }
      case Expr::Kind::kGetAttr: {
        Result<Value> obj = eval(*e.children[0], frame);
        if (!obj.ok()) return obj;
        return get_attr(*obj, e.name);
      }
      case Expr::Kind::kGetItem: {
        Result<Value> obj = eval(*e.children[0], frame);
        if (!obj.ok()) return obj;
        Result<Value> key = eval(*e.children[1], frame);
        if (!key.ok()) return key;
        return get_item(*obj, *key);
      }
      case Expr::Kind::kSlice: {
        Value parts[4];
        for (size_t i = 0; i < 4; ++i) {
          if (!e.children[i]) continue;
          Result<Value> v = eval(*e.children[i], frame);
          if (!v.ok()) return v;
          parts[i] = std::move(*v);
        }
        return slice(parts[0], parts[1], parts[2], parts[3]);
      }
      case Expr::Kind::kCall:
        return eval_call(e, frame);
      case Expr::Kind::kFilter: {
        Result<Value> input = eval(*e.children[0], frame);
        if (!input.ok()) return input;
        Result<CallArgs> args = eval_args(e, 1, frame);
        if (!args.ok()) return args.status();
        return apply_filter(e.name, *input, *args);
      }
      case Expr::Kind::kTest: {
        Result<Value> input = eval(*e.children[0], frame);
        if (!input.ok()) return input;
        Result<CallArgs> args = eval_args(e, 1, frame);
        if (!args.ok()) return args.status();
        Result<bool> r = apply_test(e.name, *input, *args);
        if (!r.ok()) return r.status();
        return Value(*r != e.negated);
      }
      case Expr::Kind::kUnary: {
        Result<Value> v = eval(*e.children[0], frame);
        if (!v.ok()) return v;
        if (e.name == "not") return Value(!v->truthy());
        if (v->is_undefined()) return undefined_error(*v);
        if (v->kind() == Value::Kind::kFloat) {
          return Value(e.name == "-" ? -v->as_double() : v->as_double());
        }
        if (v->kind() == Value::Kind::kInt || v->kind() == Value::Kind::kBool) {
          if (e.name == "-" && v->as_int() == INT64_MIN) {
            return error(ErrorCode::kUnsupported, "unsupported integer result beyond 64 bits");
          }
          return Value(e.name == "-" ? -v->as_int() : v->as_int());
        }
        return error(ErrorCode::kInvalidArgument,
                     "bad operand type for unary " + e.name + ": '" + v->type_name() + "'");
      }
      case Expr::Kind::kBinary: {
        Result<Value> a = eval(*e.children[0], frame);
        if (!a.ok()) return a;
        if (e.name == "and" && !a->truthy()) return a;
        if (e.name == "or" && a->truthy()) return a;
        Result<Value> b = eval(*e.children[1], frame);
        if (!b.ok() || e.name == "and" || e.name == "or") return b;
        return binary_op(e.name, *a, *b);
      }
      case Expr::Kind::kCondition: {
        Result<Value> c = eval(*e.children[1], frame);
        if (!c.ok()) return c;
        if (c->truthy()) return eval(*e.children[0], frame);
        if (e.children[2]) return eval(*e.children[2], frame);
        return Value::undefined(
            "the inline if-expression evaluated to false and no else section was defined");
      }
    }
    return error(ErrorCode::kInternal, "unknown expression");
  }

  Result<Value> eval_call(const Expr& e, Frame& frame) {
    const Expr& callee = *e.children[0];
    Result<CallArgs> args = eval_args(e, 1, frame);
    if (!args.ok()) return args.status();
    Value fn;
    if (callee.kind == Expr::Kind::kGetAttr) {
      Result<Value> obj = eval(*callee.children[0], frame);
      if (!obj.ok()) return obj;
      if (has_method(*obj, callee.name)) return call_method(*obj, callee.name, *args);
      if (obj->is_list() || obj->is_string() || obj->is_dict()) {
        if (!obj->find(callee.name)) {
          return error(ErrorCode::kUnsupported,
                       "unsupported method '" + callee.name + "' of " + obj->type_name());
        }
      }
      Result<Value> v = get_attr(*obj, callee.name);
      if (!v.ok()) return v;
      fn = std::move(*v);
    } else {
      Result<Value> v = eval(callee, frame);
      if (!v.ok()) return v;
      fn = std::move(*v);
    }
    if (fn.kind() == Value::Kind::kCallable) return fn.callable()(*args);
    if (fn.is_undefined()) {
      if (callee.kind == Expr::Kind::kName) {
        return error(ErrorCode::kUnsupported, "unsupported function '" + callee.name + "'");
      }
      return undefined_error(fn);
    }
    return error(ErrorCode::kInvalidArgument, "'" + fn.type_name() + "' object is not callable");
  }

  Frame globals_;
  std::vector<Value> namespaces_;
  Frame root_;
  Flow flow_ = Flow::kNormal;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Result<std::string> render(const Body& body, const ValueDict& variables) {
  return Renderer(variables).run(body);
}

}  // namespace strata::model::jinja
