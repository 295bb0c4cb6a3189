#include <algorithm>
#include <set>
#include <string>

#include "model/chat/parser_impl.h"

namespace strata::model::jinja {

// Parses until a `{% tag %}` whose name is in `ends` (left unconsumed after the name).
Status Parser::parse_body(const std::vector<std::string>& ends, Body& body, std::string& end) {
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
        if (cur().type != TokenType::kVarEnd) return fail("expected '}}', got " + describe(cur()));
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

Result<NodePtr> Parser::parse_statement() {
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
      "include", "import", "from", "extends", "block", "call", "with", "autoescape", "do"};
  --i_;
  if (kKnown.count(tag)) return unsupported("tag '" + tag + "'");
  return fail("unknown tag '" + tag + "'");
}

// `{% filter name(args)|name2 %}` and `{% set x | name %}`: a filter chain applied to the
// body, which the renderer binds to kFilterBodyName. The cursor is on the token before the
// first filter name.
Result<ExprPtr> Parser::parse_filter_block_expr() {
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

Result<Body> parse(const std::vector<Token>& tokens) {
  return Parser(tokens).run();
}

}  // namespace strata::model::jinja
