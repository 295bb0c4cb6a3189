// The parsed form of a Jinja template: expressions and statements, as the parser builds them
// and the renderer walks them.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/chat/value.h"

namespace strata::model::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,    ///< value
    kName,       ///< name
    kList,       ///< children
    kTuple,      ///< children
    kDict,       ///< children: key, value, key, value...
    kGetAttr,    ///< children[0].name
    kGetItem,    ///< children[0][children[1]]
    kSlice,      ///< children[0][children[1]:children[2]:children[3]] (null where omitted)
    kCall,       ///< children[0](children[1..], kwargs)
    kFilter,     ///< children[0] | name(children[1..], kwargs)
    kTest,       ///< children[0] is [not] name(children[1..])
    kUnary,      ///< name ("not", "-", "+") children[0]
    kBinary,     ///< children[0] name children[1]; name is the operator, "and"/"or" included
    kCondition,  ///< children[0] if children[1] else children[2] (null when there is no else)
  };
  Kind kind;
  int line = 0;
  std::string name;
  Value value;
  bool negated = false;
  std::vector<ExprPtr> children;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

/// A macro's parameter and its default (null when it has none).
struct Param {
  std::string name;
  ExprPtr default_value;
};

struct Node {
  enum class Kind {
    kText,         ///< text
    kOutput,       ///< {{ expr }}
    kIf,           ///< conditions[i] guards bodies[i]; a trailing extra body is the else
    kFor,          ///< for targets in expr [if filter]: bodies[0], else bodies[1]
    kSet,          ///< set targets = expr (target "ns.attr" sets a namespace attribute)
    kSetBlock,     ///< set targets[0] [| filter]: bodies[0] rendered into a string
    kMacro,        ///< macro text(params): bodies[0]
    kFilterBlock,  ///< filter expr (whose children[0] stands for the body): bodies[0]
    kBreak,
    kContinue,
    kPassthrough,  ///< generation blocks: bodies[0] rendered as is
  };
  Kind kind;
  int line = 0;
  std::string text;
  ExprPtr expr;    ///< output value, for iterable, set value, filter
  ExprPtr filter;  ///< for loop's `if`
  std::vector<std::string> targets;
  std::vector<ExprPtr> conditions;
  std::vector<Body> bodies;
  std::vector<Param> params;
};

}  // namespace strata::model::jinja
