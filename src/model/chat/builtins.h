// What templates can call by name: filters (`x|trim`), tests (`x is defined`), methods of
// strings and dicts (`s.strip()`), attribute and item lookup with jinja2's fallbacks, and the
// Python string operations they share. Errors carry a bare message; the renderer adds the
// line.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "model/chat/value.h"

namespace strata::model::jinja {

/// `value|name(args)`. An unknown filter is kUnsupported naming it.
Result<Value> apply_filter(const std::string& name, const Value& value, const CallArgs& args);

/// `value is name(args)`. An unknown test is kUnsupported naming it.
Result<bool> apply_test(const std::string& name, const Value& value, const CallArgs& args);

/// Whether `obj.name(...)` is a method this renderer implements for obj's type.
bool has_method(const Value& obj, const std::string& name);
/// `obj.name(args)`; has_method must hold.
Result<Value> call_method(const Value& obj, const std::string& name, const CallArgs& args);

/// `obj.name`: a dict's or namespace's entry, else undefined. Undefined `obj` is an error,
/// as jinja2's default Undefined raises on attribute access.
Result<Value> get_attr(const Value& obj, const std::string& name);
/// `obj[key]`: dict entry, list or string index (negative from the end), else undefined.
Result<Value> get_item(const Value& obj, const Value& key);
/// `obj[start:stop:step]` for lists and strings; null Values (undefined/none) are omitted.
Result<Value> slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

/// The items a for loop or a filter walks: list items, dict keys, string characters; nothing
/// for undefined. Other values are not iterable: kInvalidArgument.
Result<ValueList> iterate(const Value& value);

/// `a op b` for the arithmetic, comparison, membership and `~` operators (not and/or, which
/// short-circuit in the renderer), with Python's semantics: int/float promotion, floor
/// division and modulo, str and list concatenation and repetition.
Result<Value> binary_op(const std::string& op, const Value& a, const Value& b);

/// MarkupSafe's escape(): &, <, >, " and ' as HTML entities.
std::string escape_html(const std::string& s);

/// The error jinja2 raises when an undefined value is used for more than printing or testing.
Status undefined_error(const Value& value);

/// UTF-8 text split into its characters (invalid bytes stand alone).
std::vector<std::string> utf8_chars(const std::string& s);

}  // namespace strata::model::jinja
