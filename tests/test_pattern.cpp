// Expression patterns as data (engine/passes/pattern.h): commutative Add/Mul, named values
// that must agree, constants, alternatives, and nothing taken when a pattern fails.
#include "engine/passes/pattern.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace fb {
namespace {

// sq = x · x; cube = sq · x; y = 0.5 · cube; w = x · z
struct Fixture {
  Graph g;
  BuildConfig cfg;
  std::map<std::string, Tensor> known;
  std::vector<std::string> log;
  PassContext ctx{g, cfg, known, log, *OpRegistry::builtin()};
  Fixture() {
    for (const char* in : {"x", "z"}) {
      g.inputs.push_back(GraphInput{in, DType::Float32, {4}, {""}});
      g.values[in] = ValueInfo{DType::Float32, {4}, true};
    }
    Tensor half(DType::Float32, {});
    half.data<float>()[0] = 0.5f;
    g.initializers["half"] = half;
    g.values["half"] = ValueInfo{DType::Float32, {}, true};
    node("sq", "Mul", {"x", "x"}, "s");
    node("cube", "Mul", {"s", "x"}, "c");
    node("scale", "Mul", {"half", "c"}, "y");
    node("other", "Mul", {"x", "z"}, "w");
    g.outputs = {"y", "w"};
  }
  void node(const char* name, const char* op, std::vector<std::string> in, std::string out) {
    Node n;
    n.name = name;
    n.op_type = op;
    n.inputs = std::move(in);
    n.outputs = {out};
    n.sources = {name};
    g.values[out] = ValueInfo{DType::Float32, {4}, true};
    g.nodes.push_back(n);
  }
};

TEST(Pattern, MatchesTheFormulaInAnyOperandOrderAndBindsItsNames) {
  Fixture f;
  const Pattern x = any("x");
  // Written x · (x · x) and c · 0.5; the graph has (x · x) · x and 0.5 · c.
  const Pattern p = op("Mul", {op("Mul", {x, op("Mul", {x, x})}, "cube"), constant(0.5f)});
  Matcher m(f.ctx, 2);
  const std::optional<PatternMatch> r = match_pattern(m, p, 2);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->values.at("x"), "x");
  EXPECT_EQ(r->nodes.at("cube")->name, "cube");
  std::vector<size_t> taken = m.nodes();
  std::sort(taken.begin(), taken.end());
  EXPECT_EQ(taken, (std::vector<size_t>{0, 1, 2}));
}

TEST(Pattern, FailsWithoutTakingAnythingOnAWrongConstantOpOrName) {
  Fixture f;
  const Pattern x = any("x");
  for (const Pattern& p : {op("Mul", {op("Mul", {x, op("Mul", {x, x})}), constant(0.25f)}),  // 0.25 is not 0.5
                           op("Mul", {op("Add", {x, x}), constant(0.5f)}),                   // an Add is not a Mul
                           op("Mul", {x, x})}) {                                             // c is not 0.5
    Matcher m(f.ctx, 2);
    EXPECT_FALSE(match_pattern(m, p, 2));
    EXPECT_EQ(m.nodes(), (std::vector<size_t>{2}));
  }
  // x · z: one name cannot be two values; two names can.
  Matcher m(f.ctx, 3);
  EXPECT_FALSE(match_pattern(m, op("Mul", {x, x}), 3));
  EXPECT_TRUE(match_pattern(m, op("Mul", {x, any("z")}), 3));
}

TEST(Pattern, TriesTheAlternativesInOrder) {
  Fixture f;
  const Pattern x = any("x");
  const Pattern cube = one_of({op("Pow", {x, constant(3.f)}), op("Mul", {x, op("Mul", {x, x}, "square")})});
  Matcher m(f.ctx, 1);
  const std::optional<PatternMatch> r = match_pattern(m, cube, 1);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->nodes.at("square")->name, "sq");
  EXPECT_EQ(m.size(), 2u);
}

}  // namespace
}  // namespace fb
