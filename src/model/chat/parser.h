// Builds the statement tree of a Jinja template from its tokens.
#pragma once

#include <vector>

#include "core/status.h"
#include "model/chat/ast.h"
#include "model/chat/lexer.h"

namespace strata::model::jinja {

/// Name the filter-block body is bound to while a `{% filter %}` applies its filter; no
/// template can spell it.
inline constexpr const char* kFilterBodyName = "\x01body";

/// The template's top-level statements. A syntax error is kMalformed, a tag the renderer does
/// not implement (e.g. `include`) kUnsupported, both with the line.
Result<Body> parse(const std::vector<Token>& tokens);

}  // namespace strata::model::jinja
