// Expression patterns as data: a rule writes the math it looks for, and one matcher walks
// it backwards from the value it computes, through the graph's use-def index.
//
//   const Pattern gelu = op("Mul", {op("Mul", {any("x"), one_plus_erf}), constant(0.5f)});
//
// An op pattern matches the node writing the value (type and operand count); Add and Mul
// match their operands in either order. A named value (any("x")) matches any value, and
// the same value wherever the name appears again. A constant matches a scalar within 1e-4
// (constant_near). one_of() lists alternative forms, tried in order.
//
// Matching checks structure only; whether the nodes it took may become one layer (outside
// readers, exclusions, partition points) is can_fuse's to say, once, for every pass.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/passes/matcher.h"

namespace fb {

struct Pattern {
  enum class Kind { kOp, kValue, kConstant, kOneOf };
  Kind kind = Kind::kValue;
  Op op{""};                   // kOp
  std::vector<Pattern> parts;  // kOp: operands; kOneOf: the alternatives
  std::string name;            // kValue: its name; kOp: a tag to find the matched node by
  float constant = 0;          // kConstant
};

Pattern op(const char* type, std::vector<Pattern> operands, std::string tag = "");
Pattern any(std::string name);
Pattern constant(float value);
Pattern one_of(std::vector<Pattern> alternatives);

// What a match bound: named values, and tagged nodes.
struct PatternMatch {
  std::map<std::string, std::string> values;
  std::map<std::string, const Node*> nodes;
};

// Matches `p` (an op pattern) at node `root`, taking the nodes it covers into `m` (whose
// root must be `root`). Nothing is taken when it does not match.
std::optional<PatternMatch> match_pattern(Matcher& m, const Pattern& p, size_t root);

}  // namespace fb
