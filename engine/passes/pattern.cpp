#include "engine/passes/pattern.h"

#include <cstring>

namespace fb {

Pattern op(const char* type, std::vector<Pattern> operands, std::string tag) {
  Pattern p;
  p.kind = Pattern::Kind::kOp;
  p.op = Op{type, static_cast<int>(operands.size())};
  p.parts = std::move(operands);
  p.name = std::move(tag);
  return p;
}

Pattern any(std::string name) {
  Pattern p;
  p.kind = Pattern::Kind::kValue;
  p.name = std::move(name);
  return p;
}

Pattern constant(float value) {
  Pattern p;
  p.kind = Pattern::Kind::kConstant;
  p.constant = value;
  return p;
}

Pattern one_of(std::vector<Pattern> alternatives) {
  Pattern p;
  p.kind = Pattern::Kind::kOneOf;
  p.parts = std::move(alternatives);
  return p;
}

namespace {

bool commutative(const Pattern& p) {
  return p.parts.size() == 2 && p.op.domain[0] == '\0' &&
         (std::strcmp(p.op.type, "Add") == 0 || std::strcmp(p.op.type, "Mul") == 0);
}

bool match_value(Matcher& m, const Pattern& p, const std::string& v, PatternMatch& b);

// n (already taken) against an op or one_of pattern. On failure, what was taken or bound
// on the way is given back; the caller gives back n itself.
bool match_node(Matcher& m, const Pattern& p, const Node& n, PatternMatch& b) {
  const size_t mark = m.mark();
  const PatternMatch before = b;
  if (p.kind == Pattern::Kind::kOneOf) {
    for (const Pattern& alternative : p.parts) {
      if (match_node(m, alternative, n, b)) return true;
      m.reset(mark);
      b = before;
    }
    return false;
  }
  if (p.kind != Pattern::Kind::kOp || !p.op.matches(&n)) return false;
  for (int swapped = 0; swapped < (commutative(p) ? 2 : 1); ++swapped) {
    bool all = true;
    for (size_t i = 0; i < p.parts.size() && all; ++i)
      all = match_value(m, p.parts[i], n.inputs[swapped ? 1 - i : i], b);
    if (all) {
      if (!p.name.empty()) b.nodes[p.name] = &n;
      return true;
    }
    m.reset(mark);
    b = before;
  }
  return false;
}

bool match_value(Matcher& m, const Pattern& p, const std::string& v, PatternMatch& b) {
  switch (p.kind) {
    case Pattern::Kind::kValue: {
      const auto [it, fresh] = b.values.emplace(p.name, v);
      return fresh || it->second == v;
    }
    case Pattern::Kind::kConstant:
      return constant_near(m.context(), v, p.constant);
    case Pattern::Kind::kOneOf:
    case Pattern::Kind::kOp: {
      const size_t mark = m.mark();
      const Node* n = m.producer(v);  // match_node checks its op
      if (n && match_node(m, p, *n, b)) return true;
      m.reset(mark);
      return false;
    }
  }
  return false;
}

}  // namespace

std::optional<PatternMatch> match_pattern(Matcher& m, const Pattern& p, size_t root) {
  PatternMatch b;
  const size_t mark = m.mark();
  if (match_node(m, p, m.context().graph.nodes[root], b)) return b;
  m.reset(mark);
  return std::nullopt;
}

}  // namespace fb
