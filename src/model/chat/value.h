// The values a Jinja template computes with, with Python's semantics where jinja2 borrows
// them (truthiness, equality, str() and repr()), so renders match jinja2 byte for byte.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace strata::model::jinja {

class Value;
struct CallArgs;

using ValueList = std::vector<Value>;
/// Insertion-ordered, as Python dicts are; templates keep them small, so lookups are linear.
using ValueDict = std::vector<std::pair<std::string, Value>>;
/// A function a template can call: globals, macros, bound methods.
using Callable = std::function<Result<Value>(CallArgs&)>;

/// One Jinja value. Lists and dicts are shared and never modified after construction (the
/// sandbox HF renders in forbids mutation); a namespace is the one mutable object.
class Value {
 public:
  enum class Kind {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kDict,
    kNamespace,
    kCallable
  };

  Value() = default;  ///< undefined
  /// An undefined value that remembers what using it should report ("'x' is undefined").
  static Value undefined(std::string error_message) {
    Value v;
    v.str_ = std::move(error_message);
    return v;
  }
  static Value none() { return Value(Kind::kNone); }
  Value(bool b) : kind_(Kind::kBool), int_(b) {}       // NOLINT: literals convert implicitly
  Value(int64_t i) : kind_(Kind::kInt), int_(i) {}     // NOLINT
  Value(int i) : kind_(Kind::kInt), int_(i) {}         // NOLINT
  Value(double f) : kind_(Kind::kFloat), float_(f) {}  // NOLINT
  Value(std::string s) : kind_(Kind::kString), str_(std::move(s)) {}  // NOLINT
  Value(const char* s) : kind_(Kind::kString), str_(s) {}             // NOLINT
  Value(ValueList items, bool tuple = false);                         // NOLINT
  Value(ValueDict items);                                             // NOLINT
  /// What jinja2's map, select, unique and friends return: a Python generator, which is
  /// always true, can be iterated but has no len(), no items by index and no JSON form.
  static Value iterator(ValueList items);
  /// namespace(...): attributes that `{% set ns.x = ... %}` may change, seen by every copy.
  static Value make_namespace(ValueDict items);
  /// A string marked safe (MarkupSafe's Markup), as `|safe` and `|escape` return: adding a
  /// plain string to it HTML-escapes that string first.
  static Value markup(std::string s);
  static Value function(Callable fn);

  Kind kind() const { return kind_; }
  /// How deeply lists and dicts nest inside: 0 for a scalar, 1 for a flat list. Renders
  /// refuse values nested past kMaxValueDepth, which recursive printing could not handle.
  int depth() const { return depth_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_markup() const { return kind_ == Kind::kString && markup_; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat; }
  bool is_tuple() const { return kind_ == Kind::kList && seq_ == Seq::kTuple; }
  bool is_iterator() const { return kind_ == Kind::kList && seq_ == Seq::kIterator; }

  bool as_bool() const { return int_ != 0; }
  int64_t as_int() const { return int_; }
  double as_double() const { return kind_ == Kind::kFloat ? float_ : static_cast<double>(int_); }
  /// The string itself; for undefined values the error that using them raises.
  const std::string& as_string() const { return str_; }
  const ValueList& list() const { return *list_; }
  const ValueDict& dict() const { return *dict_; }
  /// A namespace's attributes; shared by every copy of the value.
  ValueDict& namespace_items() const { return *dict_; }
  const Callable& callable() const { return *fn_; }

  /// The entry for `key` in a dict or namespace, or nullptr.
  const Value* find(const std::string& key) const;

  /// Python's bool(): empty containers, zero, "", None and undefined are false.
  bool truthy() const;
  /// Python's str(), as `{{ value }}` writes it; undefined writes "".
  std::string str() const;
  /// Python's repr(), as str() of a container writes its items.
  std::string repr() const;
  /// Python's ==: ints equal floats of the same value; containers compare deeply.
  bool equals(const Value& other) const;
  /// Name of the Python type, for error messages.
  std::string type_name() const;

 private:
  explicit Value(Kind kind) : kind_(kind) {}

  Kind kind_ = Kind::kUndefined;
  enum class Seq { kList, kTuple, kIterator };
  Seq seq_ = Seq::kList;
  int depth_ = 0;
  bool markup_ = false;
  int64_t int_ = 0;
  double float_ = 0;
  std::string str_;
  std::shared_ptr<const ValueList> list_;
  std::shared_ptr<ValueDict> dict_;
  std::shared_ptr<const Callable> fn_;
};

/// Nesting of lists and dicts deeper than any template or message needs.
inline constexpr int kMaxValueDepth = 128;

/// Arguments of a call: positional, then keyword in the order written.
struct CallArgs {
  ValueList args;
  std::vector<std::pair<std::string, Value>> kwargs;

  /// The argument at `pos` or named `name`, or `fallback` when neither was given.
  Value get(size_t pos, const std::string& name, Value fallback = Value()) const;
};

/// Python's repr() of a float: the shortest text that reads back as the same double.
std::string float_repr(double f);
/// Python's repr() of a string: single quotes unless the text holds ' but no ".
std::string string_repr(const std::string& s);

}  // namespace strata::model::jinja
