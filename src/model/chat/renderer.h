// Walks a parsed template and writes its output, as jinja2 would render it.
#pragma once

#include <string>

#include "core/status.h"
#include "model/chat/ast.h"
#include "model/chat/value.h"

namespace strata::model::jinja {

/// Renders `body` with `variables` as the template's context. Besides them the template sees
/// HF's globals: raise_exception(msg) (fails the render with msg), strftime_now(fmt) (local
/// time), namespace(...), range(...) and dict(...). Errors name the line; a construct this
/// renderer does not implement is kUnsupported naming it.
Result<std::string> render(const Body& body, const ValueDict& variables);

}  // namespace strata::model::jinja
