// The recursive-descent parser behind parse(): its token cursor and helpers, shared by the
// statement half (parser.cpp) and the expression half (parse_expression.cpp).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/chat/ast.h"
#include "model/chat/lexer.h"
#include "model/chat/parser.h"

namespace strata::model::jinja {

// Nesting (of brackets, operators, tags) deeper than any real template, shallow enough that
// parsing and rendering stay far from the end of a thread's stack.
inline constexpr int kMaxDepth = 200;

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
  // Statements (parser.cpp).
  // Parses until a `{% tag %}` whose name is in `ends` (left unconsumed after the name).
  Status parse_body(const std::vector<std::string>& ends, Body& body, std::string& end);
  Result<NodePtr> parse_statement();
  // `{% filter name(args)|name2 %}` and `{% set x | name %}`: a filter chain applied to the
  // body, which the renderer binds to kFilterBodyName. The cursor is on the token before the
  // first filter name.
  Result<ExprPtr> parse_filter_block_expr();

  // Expressions, by jinja2's precedence (parse_expression.cpp).
  Result<ExprPtr> parse_tuple_or_expression();
  Result<ExprPtr> parse_expression(bool with_condexpr = true);
  Result<ExprPtr> binary(ExprPtr left, std::string op, ExprPtr right, int line);
  Result<ExprPtr> parse_or();
  Result<ExprPtr> parse_and();
  Result<ExprPtr> parse_not();
  Result<ExprPtr> parse_compare();
  Result<ExprPtr> parse_math1();
  Result<ExprPtr> parse_concat();
  Result<ExprPtr> parse_math2();
  Result<ExprPtr> parse_pow();
  Result<ExprPtr> parse_unary(bool with_filter);
  Result<ExprPtr> parse_primary();
  Result<ExprPtr> parse_paren();
  Result<ExprPtr> parse_list();
  Result<ExprPtr> parse_dict();
  Result<ExprPtr> parse_postfix(ExprPtr node);
  Result<ExprPtr> parse_subscript(ExprPtr obj, int line);
  // Arguments after '(' into `call` (children from index 1, and kwargs).
  Status parse_args(Expr& call);
  Result<ExprPtr> parse_call(ExprPtr callee);
  // The cursor is on the filter's name.
  Result<ExprPtr> parse_filter(ExprPtr node);
  Result<ExprPtr> parse_filter_expr(ExprPtr node);

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

  Status unsupported(const std::string& what) const {
    return error(ErrorCode::kUnsupported,
                 "chat template: unsupported " + what + " at line " + std::to_string(cur().line));
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

}  // namespace strata::model::jinja
