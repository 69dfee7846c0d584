// Shape inputs bound at build time (engine/builder/shape_inputs.h, harness/measure/exec_engine.h)
// and the eager region for data-dependent shapes (engine/builder/eager_region.h): which
// inputs are bound and what the build log says, the error naming an unbound one, and
// eager layers that size their outputs on every run, checked on exact values.
#include <gtest/gtest.h>

#include "engine/builder/builder.h"
#include "engine/builder/shape_inputs.h"
#include "engine/runtime/profiler.h"
#include "harness/measure/exec_engine.h"
#include "tensor_test_support.h"

namespace fb {
namespace {

using test::make;
using test::values;

Node node(const std::string& name, const std::string& op, std::vector<std::string> ins, std::vector<std::string> outs,
          std::map<std::string, Attribute> attrs = {}) {
  Node n;
  n.name = name;
  n.op_type = op;
  n.opset = 17;
  n.inputs = std::move(ins);
  n.outputs = std::move(outs);
  n.attrs = std::move(attrs);
  n.sources = {name};
  return n;
}

GraphInput input(const std::string& name, DType dtype, Shape dims) {
  return GraphInput{name, dtype, dims, std::vector<std::string>(dims.size(), "")};
}

void add_initializer(Graph& g, const std::string& name, Tensor t) {
  g.values[name] = ValueInfo{t.dtype(), t.shape(), true};
  g.initializers[name] = std::move(t);
}

bool log_has(const Engine& e, const std::string& line) {
  for (const std::string& l : e.build_log())
    if (l == line) return true;
  return false;
}

// x float[2,3] ─ Reshape(shape) ─▶ y, `shape` an int64[2] graph input.
Graph reshape_graph() {
  Graph g;
  g.name = "reshape";
  g.opset = 17;
  g.inputs = {input("x", DType::Float32, {2, 3}), input("shape", DType::Int64, {2})};
  g.nodes = {node("r", "Reshape", {"x", "shape"}, {"y"})};
  g.outputs = {"y"};
  return g;
}

std::unique_ptr<Engine> build(const Graph& g, const BuildConfig& c) { return build_engine(g, c); }

TEST(ShapeInputs, FollowedThroughArithmeticButNotThroughShape) {
  // s ─ Add(zero) ─▶ Reshape(x) ─▶ y ─ Reshape(Shape(x)) ─▶ z: s feeds a shape, x does not.
  Graph g;
  g.opset = 17;
  g.inputs = {input("x", DType::Float32, {2, 3}), input("s", DType::Int64, {2})};
  add_initializer(g, "zero", make<int64_t>({2}, {0, 0}));
  g.nodes = {node("add", "Add", {"s", "zero"}, {"s2"}), node("r", "Reshape", {"x", "s2"}, {"y"}),
             node("shape_of_x", "Shape", {"x"}, {"sx"}), node("back", "Reshape", {"y", "sx"}, {"z"})};
  g.outputs = {"z"};
  const std::vector<ShapeInputUse> uses = find_shape_inputs(g);
  ASSERT_EQ(uses.size(), 1u);
  EXPECT_EQ(uses[0].input, "s");
  EXPECT_EQ(uses[0].node->name, "r");
  EXPECT_EQ(uses[0].node_input, 1);
  EXPECT_EQ(shape_use_str(uses[0]), "feeds Reshape 'r' (input 1)");
}

TEST(ShapeInputs, AnUnboundOneFailsTheBuildNamingIt) {
  try {
    build_engine(reshape_graph(), BuildConfig{});
    FAIL() << "the build should fail";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "graph input 'shape' feeds Reshape 'r' (input 1): a static-shape engine needs its value at build time; "
              "`fusebench exec --input shape=FILE` binds it from a file, `--shape-input shape=V[,V...]` (build, exec, "
              "inspect, profile) and a scenario's \"shape_inputs\": {\"shape\": [V, ...]} from values");
  }
}

TEST(ShapeInputs, ExecBindsThemFromTheGivenInputsAndLogsIt) {
  const Graph g = reshape_graph();
  const Tensor x = make<float>({2, 3}, {1, 2, 3, 4, 5, 6}), shape = make<int64_t>({2}, {3, 2});
  BuildConfig cfg;
  cfg.input_shapes = {{"x", {2, 3}}, {"shape", {2}}};  // as exec sets them from given files
  EngineExec r = exec_engine(g, cfg, {x, shape}, [&](const BuildConfig& c) { return build(g, c); });
  ASSERT_EQ(r.engine->graph().inputs.size(), 1u);
  EXPECT_EQ(r.engine->graph().inputs[0].name, "x");
  EXPECT_TRUE(log_has(*r.engine, "bound shape input 'shape' = int64[2] [3, 2] (feeds Reshape 'r' (input 1))"));
  ASSERT_EQ(r.kept.size(), 1u);
  EXPECT_EQ(r.kept[0].first, "y");
  EXPECT_EQ(r.kept[0].second.shape(), (Shape{3, 2}));
  EXPECT_EQ(values<float>(r.kept[0].second), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST(ShapeInputs, AValueBoundEarlierMustBeTheOneGiven) {
  // As with a plan: its config binds the input already.
  const Graph g = reshape_graph();
  BuildConfig cfg;
  cfg.constant_inputs["shape"] = make<int64_t>({2}, {3, 2});
  const Tensor x = make<float>({2, 3}, {1, 2, 3, 4, 5, 6}), other = make<int64_t>({2}, {6, 1});
  try {
    exec_engine(g, cfg, {x, other}, [&](const BuildConfig& c) { return build(g, c); });
    FAIL() << "a different value should be refused";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "input 'shape' feeds Reshape 'r' (input 1) and was bound to int64[2] [3, 2] when the engine was built; "
              "the value given is int64[2] [6, 1] (build another plan for it)");
  }
}

// x float[2,3] ─ Relu ─▶ a (output) ─ NonZero ─▶ nz ─ Transpose ─▶ idx (output)
Graph nonzero_graph() {
  Graph g;
  g.name = "nonzero";
  g.opset = 17;
  g.inputs = {input("x", DType::Float32, {2, 3})};
  g.nodes = {node("relu", "Relu", {"x"}, {"a"}), node("nz", "NonZero", {"a"}, {"nzo"}),
             node("t", "Transpose", {"nzo"}, {"idx"}, {{"perm", Attribute{std::vector<int64_t>{1, 0}}}})};
  g.outputs = {"a", "idx"};
  return g;
}

TEST(EagerRegion, DataDependentNodesRunEagerlyAfterThePlannedLayersAtEveryLevel) {
  for (FusionLevel level : {FusionLevel::None, FusionLevel::Standard, FusionLevel::Aggressive}) {
    SCOPED_TRACE(fusion_level_name(level));
    BuildConfig cfg;
    cfg.fusion = level;
    auto e = build_engine(nonzero_graph(), cfg);
    ASSERT_EQ(e->layers().size(), 2u);
    EXPECT_EQ(e->layers()[0].eager, "");
    const LayerInfo& region = e->layers()[1];
    EXPECT_EQ(region.kind, "fusebench.EagerRegion");
    EXPECT_EQ(region.eager, "node 'nz' (NonZero): output 'nzo' has a data-dependent shape (2 nodes run eagerly)");
    EXPECT_EQ(region.sources, (std::vector<std::string>{"nz", "t"}));
    EXPECT_TRUE(region.output_shapes.empty());
    // Each run sizes the outputs anew: 3 non-zero elements, then 5.
    e->run({make<float>({2, 3}, {1, -2, 3, -4, 5, -6})});
    EXPECT_EQ(values<float>(e->outputs()[0]), (std::vector<float>{1, 0, 3, 0, 5, 0}));
    EXPECT_EQ(e->outputs()[1].shape(), (Shape{3, 2}));
    EXPECT_EQ(values<int64_t>(e->outputs()[1]), (std::vector<int64_t>{0, 0, 0, 2, 1, 1}));
    e->run({make<float>({2, 3}, {1, 1, 1, 1, 1, -1})});
    EXPECT_EQ(e->outputs()[1].shape(), (Shape{5, 2}));
    EXPECT_EQ(values<int64_t>(e->outputs()[1]), (std::vector<int64_t>{0, 0, 0, 1, 0, 2, 1, 0, 1, 1}));
  }
}

TEST(EagerRegion, TheProfilerSaysWhichLayerRanEagerlyAndWhy) {
  auto e = build_engine(nonzero_graph(), BuildConfig{});
  const Profile p = profile_engine(*e, nullptr, {make<float>({2, 3}, {1, -2, 3, -4, 5, -6})}, 3);
  ASSERT_EQ(p.layers.size(), 2u);
  EXPECT_EQ(p.layers[0].eager, "");
  EXPECT_EQ(p.layers[1].eager, "node 'nz' (NonZero): output 'nzo' has a data-dependent shape (2 nodes run eagerly)");
}

TEST(EagerRegion, UpstreamLayersKeepTheirFusion) {
  // x ─ MatMul(W) ─ Add(b) ─ Relu ─▶ y (output) ─ NonZero ─▶ nz (output)
  Graph g;
  g.opset = 17;
  g.inputs = {input("x", DType::Float32, {2, 4})};
  add_initializer(g, "W", make<float>({4, 3}, {1, -1, 0, 0, 2, -3, 0, 0, 0, 0, 0, 0}));
  add_initializer(g, "b", make<float>({3}, {0, 0, 1}));
  g.nodes = {node("mm", "MatMul", {"x", "W"}, {"m"}), node("add", "Add", {"m", "b"}, {"a"}), node("relu", "Relu", {"a"}, {"y"}),
             node("nz", "NonZero", {"y"}, {"nzo"})};
  g.outputs = {"y", "nzo"};
  BuildConfig cfg;
  cfg.fusion = FusionLevel::Standard;
  auto e = build_engine(g, cfg);
  ASSERT_EQ(e->layers().size(), 2u);
  EXPECT_EQ(e->layers()[0].kind, "fusebench.FusedMatMul");
  EXPECT_EQ(e->layers()[0].sources, (std::vector<std::string>{"mm", "add", "relu"}));
  EXPECT_EQ(e->layers()[0].eager, "");
  EXPECT_EQ(e->layers()[1].kind, "fusebench.EagerRegion");
  // y = relu([[1, -1, 1], [0, 2, -2]]) = [[1, 0, 1], [0, 2, 0]]: non-zero at (0,0), (0,2), (1,1).
  e->run({make<float>({2, 4}, {1, 0, 0, 0, 0, 1, 0, 0})});
  EXPECT_EQ(values<float>(e->outputs()[0]), (std::vector<float>{1, 0, 1, 0, 2, 0}));
  EXPECT_EQ(e->outputs()[1].shape(), (Shape{2, 3}));
  EXPECT_EQ(values<int64_t>(e->outputs()[1]), (std::vector<int64_t>{0, 0, 1, 0, 2, 1}));
}

TEST(EagerRegion, AShapeComputedFromDataAtRunTime) {
  // k is int64[1,1]: data, not a shape input (not a vector); TopK's K comes from it at run time.
  Graph g;
  g.opset = 17;
  g.inputs = {input("x", DType::Float32, {1, 5}), input("k", DType::Int64, {1, 1})};
  add_initializer(g, "one", make<int64_t>({1}, {1}));
  g.nodes = {node("flat", "Reshape", {"k", "one"}, {"k1"}), node("top", "TopK", {"x", "k1"}, {"v", "i"})};
  g.outputs = {"v", "i"};
  EXPECT_TRUE(find_shape_inputs(g).empty());
  auto e = build_engine(g, BuildConfig{});
  ASSERT_EQ(e->layers().size(), 2u);
  EXPECT_EQ(e->layers()[1].eager, "node 'top' (TopK): its shape input 1 ('k1') is computed at run time (1 node run eagerly)");
  const Tensor x = make<float>({1, 5}, {3, 1, 4, 1, 5});
  e->run({x, make<int64_t>({1, 1}, {2})});
  EXPECT_EQ(values<float>(e->outputs()[0]), (std::vector<float>{5, 4}));
  EXPECT_EQ(values<int64_t>(e->outputs()[1]), (std::vector<int64_t>{4, 2}));
  e->run({x, make<int64_t>({1, 1}, {3})});
  EXPECT_EQ(e->outputs()[0].shape(), (Shape{1, 3}));
  EXPECT_EQ(values<float>(e->outputs()[0]), (std::vector<float>{5, 4, 3}));
  EXPECT_EQ(values<int64_t>(e->outputs()[1]), (std::vector<int64_t>{4, 2, 0}));
}

}  // namespace
}  // namespace fb
