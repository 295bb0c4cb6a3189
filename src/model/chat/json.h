// JSON in and out of template values: parsing the messages and tools a caller passes, and
// the `tojson` filter as HF's chat-template environment defines it.
#pragma once

#include <string>

#include "core/status.h"
#include "model/chat/value.h"

namespace strata::model::jinja {

/// The value of a JSON text: objects keep their key order, integers stay integers.
/// Malformed JSON, or JSON nested past kMaxValueDepth, is kInvalidArgument.
Result<Value> parse_json(const std::string& text);

/// Python's json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=sort_keys), which is
/// what HF's `tojson` filter returns: no HTML escaping (jinja2's own tojson would turn <, >, &
/// and ' into \u003c..., HF replaces it), non-ASCII text kept as is. `indent` < 0 means
/// None (", " and ": " separators on one line). Undefined, namespaces and functions are not
/// serializable: kInvalidArgument, as Python's TypeError.
Result<std::string> to_json(const Value& value, int indent = -1, bool sort_keys = false);

}  // namespace strata::model::jinja
