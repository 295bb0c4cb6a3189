#include "model/chat/parser.h"

#include <algorithm>
#include <set>
#include <string>

namespace strata::model::jinja {
namespace {

// Nesting (of brackets, operators, tags) deeper than any real template, shallow enough that
// parsing and rendering stay far from the end of a thread's stack.
constexpr int kMaxDepth = 200;

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : t_(tokens) {}

  Result<Body> run() {
    Body body;
    std::string end;
    STRATA_RETURN_IF_ERROR(parse_body({}, body, end));
    return body;
  }

 private:
  const Token& cur() const { return t_[i_]; }
  const Token& peek(size_t n = 1) const { return t_[std::min(i_ + n, t_.size() - 1)]; }
  bool is_op(const char* op) const { return cur().type == TokenType::kOp && cur().text == op; }
  bool is_name(const char* name) const {
    return cur().type == TokenType::kName && cur().text == name;
  }
  bool accept_op(const char* op) {
    if (!is_op(op)) return false;
    ++i_;
    return true;
  }
  bool accept_name(const char* name) {
    if (!is_name(name)) return false;
    ++i_;
    return true;
  }

  Status fail(const std::string& what) const {
    return error(ErrorCode::kMalformed,
                 "chat template: syntax error at line " + std::to_string(cur().line) + ": " + what);
  }
  static std::string describe(const Token& t) {
    switch (t.type) {
      case TokenType::kText:
        return "text";
      case TokenType::kVarBegin:
        return "'{{'";
      case TokenType::kVarEnd:
        return "'}}'";
      case TokenType::kBlockBegin:
        return "'{%'";
      case TokenType::kBlockEnd:
        return "'%}'";
      case TokenType::kEof:
        return "end of template";
      case TokenType::kString:
        return "string";
      default:
        return "'" + t.text + "'";
    }
  }
  Status expect_op(const char* op) {
    if (accept_op(op)) return Status::ok_status();
    return fail(std::string("expected '") + op + "', got " + describe(cur()));
  }
  Result<std::string> expect_name() {
    if (cur().type != TokenType::kName) return fail("expected a name, got " + describe(cur()));
    return t_[i_++].text;
  }
  Status expect_block_end() {
    if (cur().type == TokenType::kBlockEnd) {
      ++i_;
      return Status::ok_status();
    }
    return fail("expected '%}', got " + describe(cur()));
  }

  static ExprPtr make(Expr::Kind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }

  // Statements ---------------------------------------------------------------------------

  // Parses until a `{% tag %}` whose name is in `ends` (left unconsumed after the name).
  Status parse_body(const std::vector<std::string>& ends, Body& body, std::string& end) {
    for (;;) {
      const Token& tok = cur();
      switch (tok.type) {
        case TokenType::kEof:
          if (ends.empty()) return Status::ok_status();
          return fail("missing '{% " + ends.back() + " %}'");
        case TokenType::kText: {
          auto n = std::make_unique<Node>();
          n->kind = Node::Kind::kText;
          n->line = tok.line;
          n->text = tok.text;
          body.push_back(std::move(n));
          ++i_;
          break;
        }
        case TokenType::kVarBegin: {
          ++i_;
          auto n = std::make_unique<Node>();
          n->kind = Node::Kind::kOutput;
          n->line = tok.line;
          Result<ExprPtr> e = parse_expression();
          if (!e.ok()) return e.status();
          n->expr = std::move(*e);
          if (cur().type != TokenType::kVarEnd)
            return fail("expected '}}', got " + describe(cur()));
          ++i_;
          body.push_back(std::move(n));
          break;
        }
        case TokenType::kBlockBegin: {
          ++i_;
          if (cur().type != TokenType::kName) return fail("expected a tag name");
          const std::string name = cur().text;
          if (std::find(ends.begin(), ends.end(), name) != ends.end()) {
            ++i_;
            end = name;
            return Status::ok_status();
          }
          Result<NodePtr> n = parse_statement();
          if (!n.ok()) return n.status();
          body.push_back(std::move(*n));
          break;
        }
        default:
          return fail("unexpected " + describe(tok));
      }
    }
  }

  Result<NodePtr> parse_statement() {
    const Nest nest(depth_);
    if (nest.too_deep()) return fail("tags nested too deeply");
    const int line = cur().line;
    const std::string tag = t_[i_++].text;
    auto n = std::make_unique<Node>();
    n->line = line;
    if (tag == "if") {
      n->kind = Node::Kind::kIf;
      std::string end = "elif";
      while (end == "elif") {
        Result<ExprPtr> cond = parse_expression();
        if (!cond.ok()) return cond.status();
        n->conditions.push_back(std::move(*cond));
        STRATA_RETURN_IF_ERROR(expect_block_end());
        n->bodies.emplace_back();
        STRATA_RETURN_IF_ERROR(parse_body({"elif", "else", "endif"}, n->bodies.back(), end));
      }
      if (end == "else") {
        STRATA_RETURN_IF_ERROR(expect_block_end());
        n->bodies.emplace_back();
        STRATA_RETURN_IF_ERROR(parse_body({"endif"}, n->bodies.back(), end));
      }
      STRATA_RETURN_IF_ERROR(expect_block_end());
      return n;
    }
    if (tag == "for") {
      n->kind = Node::Kind::kFor;
      do {
        Result<std::string> target = expect_name();
        if (!target.ok()) return target.status();
        n->targets.push_back(*target);
      } while (accept_op(","));
      if (!accept_name("in")) return fail("expected 'in' in for loop");
      Result<ExprPtr> iter = parse_expression(/*with_condexpr=*/false);
      if (!iter.ok()) return iter.status();
      n->expr = std::move(*iter);
      if (accept_name("if")) {
        Result<ExprPtr> filter = parse_expression(false);
        if (!filter.ok()) return filter.status();
        n->filter = std::move(*filter);
      }
      if (is_name("recursive")) return unsupported("recursive for loops");
      STRATA_RETURN_IF_ERROR(expect_block_end());
      n->bodies.emplace_back();
      std::string end;
      STRATA_RETURN_IF_ERROR(parse_body({"else", "endfor"}, n->bodies.back(), end));
      if (end == "else") {
        STRATA_RETURN_IF_ERROR(expect_block_end());
        n->bodies.emplace_back();
        STRATA_RETURN_IF_ERROR(parse_body({"endfor"}, n->bodies.back(), end));
      }
      STRATA_RETURN_IF_ERROR(expect_block_end());
      return n;
    }
    if (tag == "set") {
      Result<std::string> target = expect_name();
      if (!target.ok()) return target.status();
      n->targets.push_back(*target);
      if (accept_op(".")) {
        Result<std::string> attr = expect_name();
        if (!attr.ok()) return attr.status();
        n->text = *attr;
      } else {
        while (accept_op(",")) {
          Result<std::string> more = expect_name();
          if (!more.ok()) return more.status();
          n->targets.push_back(*more);
        }
      }
      if (accept_op("=")) {
        n->kind = Node::Kind::kSet;
        Result<ExprPtr> value = parse_tuple_or_expression();
        if (!value.ok()) return value.status();
        n->expr = std::move(*value);
        STRATA_RETURN_IF_ERROR(expect_block_end());
        return n;
      }
      if (!n->text.empty() || n->targets.size() != 1) return fail("expected '=' in set");
      n->kind = Node::Kind::kSetBlock;
      if (is_op("|")) {
        Result<ExprPtr> f = parse_filter_block_expr();
        if (!f.ok()) return f.status();
        n->expr = std::move(*f);
      }
      STRATA_RETURN_IF_ERROR(expect_block_end());
      n->bodies.emplace_back();
      std::string end;
      STRATA_RETURN_IF_ERROR(parse_body({"endset"}, n->bodies.back(), end));
      STRATA_RETURN_IF_ERROR(expect_block_end());
      return n;
    }
    if (tag == "macro") {
      n->kind = Node::Kind::kMacro;
      Result<std::string> name = expect_name();
      if (!name.ok()) return name.status();
      n->text = *name;
      STRATA_RETURN_IF_ERROR(expect_op("("));
      while (!accept_op(")")) {
        if (!n->params.empty()) STRATA_RETURN_IF_ERROR(expect_op(","));
        if (accept_op(")")) break;
        Result<std::string> p = expect_name();
        if (!p.ok()) return p.status();
        Param param{*p, nullptr};
        if (accept_op("=")) {
          Result<ExprPtr> d = parse_expression();
          if (!d.ok()) return d.status();
          param.default_value = std::move(*d);
        }
        n->params.push_back(std::move(param));
      }
      STRATA_RETURN_IF_ERROR(expect_block_end());
      n->bodies.emplace_back();
      std::string end;
      STRATA_RETURN_IF_ERROR(parse_body({"endmacro"}, n->bodies.back(), end));
      if (cur().type == TokenType::kName && cur().text == n->text) ++i_;
      STRATA_RETURN_IF_ERROR(expect_block_end());
      return n;
    }
    if (tag == "filter") {
      n->kind = Node::Kind::kFilterBlock;
      --i_;  // parse_filter_block_expr starts at a '|'-like position: reuse the tag name slot
      Result<ExprPtr> f = parse_filter_block_expr();
      if (!f.ok()) return f.status();
      n->expr = std::move(*f);
      STRATA_RETURN_IF_ERROR(expect_block_end());
      n->bodies.emplace_back();
      std::string end;
      STRATA_RETURN_IF_ERROR(parse_body({"endfilter"}, n->bodies.back(), end));
      STRATA_RETURN_IF_ERROR(expect_block_end());
      return n;
    }
    if (tag == "break" || tag == "continue") {
      n->kind = tag == "break" ? Node::Kind::kBreak : Node::Kind::kContinue;
      STRATA_RETURN_IF_ERROR(expect_block_end());
      return n;
    }
    if (tag == "generation") {
      // HF's AssistantTracker extension: marks assistant text, renders its body unchanged.
      n->kind = Node::Kind::kPassthrough;
      STRATA_RETURN_IF_ERROR(expect_block_end());
      n->bodies.emplace_back();
      std::string end;
      STRATA_RETURN_IF_ERROR(parse_body({"endgeneration"}, n->bodies.back(), end));
      STRATA_RETURN_IF_ERROR(expect_block_end());
      return n;
    }
    static const std::set<std::string> kKnown = {
        "raw", "include", "import", "from", "extends", "block", "call", "with", "autoescape", "do"};
    --i_;
    if (kKnown.count(tag)) return unsupported("tag '" + tag + "'");
    return fail("unknown tag '" + tag + "'");
  }

  Status unsupported(const std::string& what) const {
    return error(ErrorCode::kUnsupported,
                 "chat template: unsupported " + what + " at line " + std::to_string(cur().line));
  }

  // `{% filter name(args)|name2 %}` and `{% set x | name %}`: a filter chain applied to the
  // body, which the renderer binds to kFilterBodyName. The cursor is on the token before the
  // first filter name.
  Result<ExprPtr> parse_filter_block_expr() {
    ExprPtr node = make(Expr::Kind::kName, cur().line);
    node->name = kFilterBodyName;
    ++i_;
    Result<ExprPtr> f = parse_filter(std::move(node));
    if (!f.ok()) return f.status();
    node = std::move(*f);
    while (accept_op("|")) {
      f = parse_filter(std::move(node));
      if (!f.ok()) return f.status();
      node = std::move(*f);
    }
    return node;
  }

  // Expressions, by jinja2's precedence --------------------------------------------------

  Result<ExprPtr> parse_tuple_or_expression() {
    const int line = cur().line;
    Result<ExprPtr> first = parse_expression();
    if (!first.ok() || !is_op(",")) return first;
    ExprPtr tuple = make(Expr::Kind::kTuple, line);
    tuple->children.push_back(std::move(*first));
    while (accept_op(",")) {
      if (cur().type == TokenType::kBlockEnd) break;
      Result<ExprPtr> e = parse_expression();
      if (!e.ok()) return e.status();
      tuple->children.push_back(std::move(*e));
    }
    return tuple;
  }

  Result<ExprPtr> parse_expression(bool with_condexpr = true) {
    const Nest nest(depth_);
    if (nest.too_deep()) return fail("expression nested too deeply");
    Result<ExprPtr> expr = parse_or();
    if (!expr.ok() || !with_condexpr) return expr;
    ExprPtr node = std::move(*expr);
    Chain chain(depth_);
    while (is_name("if")) {
      if (chain.grow()) return fail("expression nested too deeply");
      const int line = cur().line;
      ++i_;
      Result<ExprPtr> cond = parse_or();
      if (!cond.ok()) return cond.status();
      ExprPtr c = make(Expr::Kind::kCondition, line);
      c->children.push_back(std::move(node));
      c->children.push_back(std::move(*cond));
      if (accept_name("else")) {
        Result<ExprPtr> other = parse_expression();
        if (!other.ok()) return other.status();
        c->children.push_back(std::move(*other));
      } else {
        c->children.push_back(nullptr);
      }
      node = std::move(c);
    }
    return node;
  }

  Result<ExprPtr> binary(ExprPtr left, std::string op, ExprPtr right, int line) {
    ExprPtr b = make(Expr::Kind::kBinary, line);
    b->name = std::move(op);
    b->children.push_back(std::move(left));
    b->children.push_back(std::move(right));
    return b;
  }

  Result<ExprPtr> parse_or() {
    Result<ExprPtr> left = parse_and();
    Chain chain(depth_);
    while (left.ok() && is_name("or")) {
      if (chain.grow()) return fail("expression nested too deeply");
      const int line = t_[i_++].line;
      Result<ExprPtr> right = parse_and();
      if (!right.ok()) return right.status();
      left = binary(std::move(*left), "or", std::move(*right), line);
    }
    return left;
  }

  Result<ExprPtr> parse_and() {
    Result<ExprPtr> left = parse_not();
    Chain chain(depth_);
    while (left.ok() && is_name("and")) {
      if (chain.grow()) return fail("expression nested too deeply");
      const int line = t_[i_++].line;
      Result<ExprPtr> right = parse_not();
      if (!right.ok()) return right.status();
      left = binary(std::move(*left), "and", std::move(*right), line);
    }
    return left;
  }

  Result<ExprPtr> parse_not() {
    const Nest nest(depth_);
    if (nest.too_deep()) return fail("expression nested too deeply");
    if (is_name("not")) {
      const int line = t_[i_++].line;
      Result<ExprPtr> operand = parse_not();
      if (!operand.ok()) return operand.status();
      ExprPtr u = make(Expr::Kind::kUnary, line);
      u->name = "not";
      u->children.push_back(std::move(*operand));
      return u;
    }
    return parse_compare();
  }

  Result<ExprPtr> parse_compare() {
    Result<ExprPtr> left = parse_math1();
    if (!left.ok()) return left;
    ExprPtr node = std::move(*left);
    // Chains (a < b < c) nest as (a < b) and (b < c) would need b twice; templates do not
    // chain, so each comparison takes the previous result as its left side, as written.
    Chain chain(depth_);
    for (;;) {
      if (chain.grow()) return fail("expression nested too deeply");
      std::string op;
      const int line = cur().line;
      if (cur().type == TokenType::kOp &&
          (is_op("==") || is_op("!=") || is_op("<") || is_op("<=") || is_op(">") || is_op(">="))) {
        op = t_[i_++].text;
      } else if (is_name("in")) {
        ++i_;
        op = "in";
      } else if (is_name("not") && peek().type == TokenType::kName && peek().text == "in") {
        i_ += 2;
        op = "not in";
      } else {
        break;
      }
      Result<ExprPtr> right = parse_math1();
      if (!right.ok()) return right.status();
      Result<ExprPtr> b = binary(std::move(node), op, std::move(*right), line);
      node = std::move(*b);
    }
    return node;
  }

  Result<ExprPtr> parse_math1() {
    Result<ExprPtr> left = parse_concat();
    Chain chain(depth_);
    while (left.ok() && (is_op("+") || is_op("-"))) {
      if (chain.grow()) return fail("expression nested too deeply");
      const Token& op = t_[i_++];
      Result<ExprPtr> right = parse_concat();
      if (!right.ok()) return right.status();
      left = binary(std::move(*left), op.text, std::move(*right), op.line);
    }
    return left;
  }

  Result<ExprPtr> parse_concat() {
    Result<ExprPtr> left = parse_math2();
    Chain chain(depth_);
    while (left.ok() && is_op("~")) {
      if (chain.grow()) return fail("expression nested too deeply");
      const int line = t_[i_++].line;
      Result<ExprPtr> right = parse_math2();
      if (!right.ok()) return right.status();
      left = binary(std::move(*left), "~", std::move(*right), line);
    }
    return left;
  }

  Result<ExprPtr> parse_math2() {
    Result<ExprPtr> left = parse_pow();
    Chain chain(depth_);
    while (left.ok() && (is_op("*") || is_op("/") || is_op("//") || is_op("%"))) {
      if (chain.grow()) return fail("expression nested too deeply");
      const Token& op = t_[i_++];
      Result<ExprPtr> right = parse_pow();
      if (!right.ok()) return right.status();
      left = binary(std::move(*left), op.text, std::move(*right), op.line);
    }
    return left;
  }

  Result<ExprPtr> parse_pow() {
    Result<ExprPtr> left = parse_unary(true);
    Chain chain(depth_);
    while (left.ok() && is_op("**")) {
      if (chain.grow()) return fail("expression nested too deeply");
      const int line = t_[i_++].line;
      Result<ExprPtr> right = parse_unary(true);
      if (!right.ok()) return right.status();
      left = binary(std::move(*left), "**", std::move(*right), line);
    }
    return left;
  }

  Result<ExprPtr> parse_unary(bool with_filter) {
    const Nest nest(depth_);
    if (nest.too_deep()) return fail("expression nested too deeply");
    Result<ExprPtr> node = ExprPtr();
    if (is_op("-") || is_op("+")) {
      const Token& op = t_[i_++];
      Result<ExprPtr> operand = parse_unary(false);
      if (!operand.ok()) return operand.status();
      ExprPtr u = make(Expr::Kind::kUnary, op.line);
      u->name = op.text;
      u->children.push_back(std::move(*operand));
      node = std::move(u);
    } else {
      node = parse_primary();
    }
    if (!node.ok()) return node;
    node = parse_postfix(std::move(*node));
    if (node.ok() && with_filter) node = parse_filter_expr(std::move(*node));
    return node;
  }

  Result<ExprPtr> parse_primary() {
    const Token& tok = cur();
    switch (tok.type) {
      case TokenType::kName: {
        ++i_;
        ExprPtr e = make(Expr::Kind::kLiteral, tok.line);
        if (tok.text == "true" || tok.text == "True") {
          e->value = Value(true);
        } else if (tok.text == "false" || tok.text == "False") {
          e->value = Value(false);
        } else if (tok.text == "none" || tok.text == "None") {
          e->value = Value::none();
        } else {
          e->kind = Expr::Kind::kName;
          e->name = tok.text;
        }
        return e;
      }
      case TokenType::kString: {
        std::string s;
        while (cur().type == TokenType::kString) s += t_[i_++].text;
        ExprPtr e = make(Expr::Kind::kLiteral, tok.line);
        e->value = Value(std::move(s));
        return e;
      }
      case TokenType::kInt: {
        ++i_;
        ExprPtr e = make(Expr::Kind::kLiteral, tok.line);
        try {
          e->value = Value(static_cast<int64_t>(std::stoll(tok.text)));
        } catch (...) {
          return fail("integer literal out of range");
        }
        return e;
      }
      case TokenType::kFloat: {
        ++i_;
        ExprPtr e = make(Expr::Kind::kLiteral, tok.line);
        e->value = Value(std::strtod(tok.text.c_str(), nullptr));
        return e;
      }
      case TokenType::kOp:
        if (tok.text == "(") return parse_paren();
        if (tok.text == "[") return parse_list();
        if (tok.text == "{") return parse_dict();
        break;
      default:
        break;
    }
    return fail("unexpected " + describe(tok));
  }

  Result<ExprPtr> parse_paren() {
    const int line = t_[i_++].line;
    if (accept_op(")")) return make(Expr::Kind::kTuple, line);
    Result<ExprPtr> first = parse_expression();
    if (!first.ok()) return first;
    if (accept_op(")")) return first;
    ExprPtr tuple = make(Expr::Kind::kTuple, line);
    tuple->children.push_back(std::move(*first));
    while (accept_op(",")) {
      if (is_op(")")) break;
      Result<ExprPtr> e = parse_expression();
      if (!e.ok()) return e.status();
      tuple->children.push_back(std::move(*e));
    }
    STRATA_RETURN_IF_ERROR(expect_op(")"));
    return tuple;
  }

  Result<ExprPtr> parse_list() {
    ExprPtr list = make(Expr::Kind::kList, t_[i_++].line);
    while (!accept_op("]")) {
      if (!list->children.empty()) STRATA_RETURN_IF_ERROR(expect_op(","));
      if (accept_op("]")) break;
      Result<ExprPtr> e = parse_expression();
      if (!e.ok()) return e.status();
      list->children.push_back(std::move(*e));
    }
    return list;
  }

  Result<ExprPtr> parse_dict() {
    ExprPtr dict = make(Expr::Kind::kDict, t_[i_++].line);
    while (!accept_op("}")) {
      if (!dict->children.empty()) STRATA_RETURN_IF_ERROR(expect_op(","));
      if (accept_op("}")) break;
      Result<ExprPtr> k = parse_expression();
      if (!k.ok()) return k.status();
      STRATA_RETURN_IF_ERROR(expect_op(":"));
      Result<ExprPtr> v = parse_expression();
      if (!v.ok()) return v.status();
      dict->children.push_back(std::move(*k));
      dict->children.push_back(std::move(*v));
    }
    return dict;
  }

  Result<ExprPtr> parse_postfix(ExprPtr node) {
    Chain chain(depth_);
    for (;;) {
      if (chain.grow()) return fail("expression nested too deeply");
      const int line = cur().line;
      if (accept_op(".")) {
        ExprPtr g = make(Expr::Kind::kGetAttr, line);
        if (cur().type == TokenType::kInt) {
          g->kind = Expr::Kind::kGetItem;
          ExprPtr idx = make(Expr::Kind::kLiteral, line);
          idx->value = Value(static_cast<int64_t>(std::stoll(t_[i_++].text)));
          g->children.push_back(std::move(node));
          g->children.push_back(std::move(idx));
        } else {
          Result<std::string> name = expect_name();
          if (!name.ok()) return name.status();
          g->name = *name;
          g->children.push_back(std::move(node));
        }
        node = std::move(g);
      } else if (is_op("[")) {
        ++i_;
        Result<ExprPtr> sub = parse_subscript(std::move(node), line);
        if (!sub.ok()) return sub;
        node = std::move(*sub);
      } else if (is_op("(")) {
        Result<ExprPtr> call = parse_call(std::move(node));
        if (!call.ok()) return call;
        node = std::move(*call);
      } else {
        return node;
      }
    }
  }

  Result<ExprPtr> parse_subscript(ExprPtr obj, int line) {
    ExprPtr parts[3];
    bool slice = false;
    for (int k = 0; k < 3; ++k) {
      if (!is_op(":") && !is_op("]")) {
        Result<ExprPtr> e = parse_expression();
        if (!e.ok()) return e.status();
        parts[k] = std::move(*e);
      }
      if (k < 2 && accept_op(":")) {
        slice = true;
        continue;
      }
      break;
    }
    STRATA_RETURN_IF_ERROR(expect_op("]"));
    ExprPtr g = make(slice ? Expr::Kind::kSlice : Expr::Kind::kGetItem, line);
    g->children.push_back(std::move(obj));
    if (!slice && parts[0] == nullptr) return fail("empty subscript");
    g->children.push_back(std::move(parts[0]));
    if (slice) {
      g->children.push_back(std::move(parts[1]));
      g->children.push_back(std::move(parts[2]));
    }
    return g;
  }

  // Arguments after '(' into `call` (children from index 1, and kwargs).
  Status parse_args(Expr& call) {
    STRATA_RETURN_IF_ERROR(expect_op("("));
    bool first = true;
    while (!accept_op(")")) {
      if (!first) STRATA_RETURN_IF_ERROR(expect_op(","));
      first = false;
      if (accept_op(")")) break;
      if (cur().type == TokenType::kName && peek().type == TokenType::kOp && peek().text == "=") {
        std::string key = t_[i_].text;
        i_ += 2;
        Result<ExprPtr> v = parse_expression();
        if (!v.ok()) return v.status();
        call.kwargs.emplace_back(std::move(key), std::move(*v));
      } else {
        if (is_op("*") || is_op("**")) return unsupported("'*' arguments");
        Result<ExprPtr> v = parse_expression();
        if (!v.ok()) return v.status();
        call.children.push_back(std::move(*v));
      }
    }
    return Status::ok_status();
  }

  Result<ExprPtr> parse_call(ExprPtr callee) {
    ExprPtr call = make(Expr::Kind::kCall, cur().line);
    call->children.push_back(std::move(callee));
    STRATA_RETURN_IF_ERROR(parse_args(*call));
    return call;
  }

  // The cursor is on the filter's name.
  Result<ExprPtr> parse_filter(ExprPtr node) {
    const int line = cur().line;
    Result<std::string> name = expect_name();
    if (!name.ok()) return name.status();
    ExprPtr f = make(Expr::Kind::kFilter, line);
    f->name = *name;
    f->children.push_back(std::move(node));
    if (is_op("(")) STRATA_RETURN_IF_ERROR(parse_args(*f));
    return f;
  }

  Result<ExprPtr> parse_filter_expr(ExprPtr node) {
    Chain chain(depth_);
    for (;;) {
      if (chain.grow()) return fail("expression nested too deeply");
      if (accept_op("|")) {
        Result<ExprPtr> f = parse_filter(std::move(node));
        if (!f.ok()) return f;
        node = std::move(*f);
      } else if (is_name("is")) {
        const int line = t_[i_++].line;
        ExprPtr t = make(Expr::Kind::kTest, line);
        t->negated = accept_name("not");
        Result<std::string> name = expect_name();
        if (!name.ok()) return name.status();
        t->name = *name;
        t->children.push_back(std::move(node));
        if (is_op("(")) {
          STRATA_RETURN_IF_ERROR(parse_args(*t));
        } else if ((cur().type == TokenType::kName || cur().type == TokenType::kString ||
                    cur().type == TokenType::kInt || cur().type == TokenType::kFloat ||
                    is_op("(") || is_op("[") || is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and")) {
          Result<ExprPtr> arg = parse_primary();
          if (!arg.ok()) return arg;
          arg = parse_postfix(std::move(*arg));
          if (!arg.ok()) return arg;
          t->children.push_back(std::move(*arg));
        }
        node = std::move(t);
      } else if (is_op("(")) {
        Result<ExprPtr> call = parse_call(std::move(node));
        if (!call.ok()) return call;
        node = std::move(*call);
      } else {
        return node;
      }
    }
  }

  // Counts one level of nesting for as long as it lives.
  class Nest {
   public:
    explicit Nest(int& depth) : depth_(depth) { ++depth_; }
    ~Nest() { --depth_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;
    bool too_deep() const { return depth_ > kMaxDepth; }

   private:
    int& depth_;
  };

  // A left-deep chain (a + b + c, x|f|g, a.b.c) nests one level per link; the levels are
  // given back when the chain ends.
  class Chain {
   public:
    explicit Chain(int& depth) : depth_(depth), start_(depth) {}
    ~Chain() { depth_ = start_; }
    Chain(const Chain&) = delete;
    Chain& operator=(const Chain&) = delete;
    bool grow() { return ++depth_ > kMaxDepth; }

   private:
    int& depth_;
    int start_;
  };

  const std::vector<Token>& t_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

Result<Body> parse(const std::vector<Token>& tokens) {
  return Parser(tokens).run();
}

}  // namespace strata::model::jinja
