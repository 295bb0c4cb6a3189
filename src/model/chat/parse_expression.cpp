#include <string>

#include "model/chat/parser_impl.h"

namespace strata::model::jinja {
namespace {

ExprPtr clone(const Expr& e) {
  auto c = std::make_unique<Expr>();
  c->kind = e.kind;
  c->line = e.line;
  c->name = e.name;
  c->value = e.value;
  c->negated = e.negated;
  for (const ExprPtr& child : e.children) c->children.push_back(child ? clone(*child) : nullptr);
  for (const auto& [k, v] : e.kwargs) c->kwargs.emplace_back(k, clone(*v));
  return c;
}

}  // namespace

Result<ExprPtr> Parser::parse_tuple_or_expression() {
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

Result<ExprPtr> Parser::parse_expression(bool with_condexpr) {
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

Result<ExprPtr> Parser::binary(ExprPtr left, std::string op, ExprPtr right, int line) {
  ExprPtr b = make(Expr::Kind::kBinary, line);
  b->name = std::move(op);
  b->children.push_back(std::move(left));
  b->children.push_back(std::move(right));
  return b;
}

Result<ExprPtr> Parser::parse_or() {
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

Result<ExprPtr> Parser::parse_and() {
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

Result<ExprPtr> Parser::parse_not() {
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

Result<ExprPtr> Parser::parse_compare() {
  Result<ExprPtr> left = parse_math1();
  if (!left.ok()) return left;
  ExprPtr node = std::move(*left);
  // A chain a < b < c means (a < b) and (b < c), as in Python; b is parsed once and copied
  // (evaluating an expression twice has no effect a template can see).
  const Expr* last_operand = nullptr;
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
    if (last_operand == nullptr) {
      node = binary(std::move(node), op, std::move(*right), line).value();
      last_operand = node->children[1].get();
    } else {
      ExprPtr next = binary(clone(*last_operand), op, std::move(*right), line).value();
      last_operand = next->children[1].get();
      node = binary(std::move(node), "and", std::move(next), line).value();
    }
  }
  return node;
}

Result<ExprPtr> Parser::parse_math1() {
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

Result<ExprPtr> Parser::parse_concat() {
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

Result<ExprPtr> Parser::parse_math2() {
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

Result<ExprPtr> Parser::parse_pow() {
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

Result<ExprPtr> Parser::parse_unary(bool with_filter) {
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

Result<ExprPtr> Parser::parse_primary() {
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
        return unsupported("integer literal beyond 64 bits");
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

Result<ExprPtr> Parser::parse_paren() {
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

Result<ExprPtr> Parser::parse_list() {
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

Result<ExprPtr> Parser::parse_dict() {
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

Result<ExprPtr> Parser::parse_postfix(ExprPtr node) {
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

Result<ExprPtr> Parser::parse_subscript(ExprPtr obj, int line) {
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
Status Parser::parse_args(Expr& call) {
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

Result<ExprPtr> Parser::parse_call(ExprPtr callee) {
  ExprPtr call = make(Expr::Kind::kCall, cur().line);
  call->children.push_back(std::move(callee));
  STRATA_RETURN_IF_ERROR(parse_args(*call));
  return call;
}

// The cursor is on the filter's name.
Result<ExprPtr> Parser::parse_filter(ExprPtr node) {
  const int line = cur().line;
  Result<std::string> name = expect_name();
  if (!name.ok()) return name.status();
  ExprPtr f = make(Expr::Kind::kFilter, line);
  f->name = *name;
  f->children.push_back(std::move(node));
  if (is_op("(")) STRATA_RETURN_IF_ERROR(parse_args(*f));
  return f;
}

Result<ExprPtr> Parser::parse_filter_expr(ExprPtr node) {
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
                  cur().type == TokenType::kInt || cur().type == TokenType::kFloat || is_op("(") ||
                  is_op("[") || is_op("{")) &&
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

}  // namespace strata::model::jinja
