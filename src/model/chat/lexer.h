// Splits a Jinja template into text and the tokens of its tags, applying the whitespace
// rules HF renders with (trim_blocks, lstrip_blocks, `-`/`+` markers) as jinja2's lexer does.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace strata::model::jinja {

enum class TokenType {
  kText,        ///< literal template text, already stripped
  kVarBegin,    ///< {{
  kVarEnd,      ///< }}
  kBlockBegin,  ///< {%
  kBlockEnd,    ///< %}
  kName,
  kString,  ///< text holds the unescaped value
  kInt,
  kFloat,
  kOp,  ///< punctuation and operators: text holds the symbol
  kEof,
};

struct Token {
  TokenType type;
  std::string text;
  int line;
};

/// The tokens of `source`, ending with kEof. An unterminated tag or string, or a character no
/// token starts with, is kMalformed naming the line.
Result<std::vector<Token>> tokenize(const std::string& source);

}  // namespace strata::model::jinja
