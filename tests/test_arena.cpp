// Liveness-based arena planning with in-place reuse: which layers may write over an
// input (and which never may), the bytes it saves, and the outputs of zoo models staying
// bit for bit the same with it on.
#include <gtest/gtest.h>

#include <cstring>

#include "engine/runtime/arena_planner.h"
#include "harness/cases/model_source.h"
#include "tests/pass_test_support.h"

namespace fb {
namespace {

using Home = PlanValue::Home;

PlanValue arena_value(Shape shape, bool kept = false) {
  return PlanValue{Home::Arena, DType::Float32, shape, size_t(shape_numel(shape)) * 4, kept};
}
PlanValue graph_input(Shape shape) { return PlanValue{Home::Input, DType::Float32, shape, 0, false}; }
PlanLayer unary(int in, int out, bool in_place = true) { return PlanLayer{{in}, {out}, false, in_place}; }

// v0 (graph input) ─▶ relu ─▶ v1 ─▶ relu ─▶ v2 ─▶ relu ─▶ v3 (graph output)
TEST(ArenaPlanner, ChainOfInPlaceLayersUsesOneBuffer) {
  const Shape s{4, 16};
  std::vector<PlanValue> v{graph_input(s), arena_value(s), arena_value(s), arena_value(s, true)};
  std::vector<PlanLayer> l{unary(0, 1), unary(1, 2), unary(2, 3)};
  ActivationPlan with = plan_activations(v, l, true);
  EXPECT_EQ(with.in_place_input, (std::vector<int>{-1, 1, 2}));  // never over the graph input
  EXPECT_EQ(with.root, (std::vector<int>{0, 1, 1, 1}));
  EXPECT_EQ(with.arena_bytes, 256u);
  ActivationPlan without = plan_activations(v, l, false);
  EXPECT_EQ(without.in_place_layers, 0);
  EXPECT_EQ(without.arena_bytes, 512u);  // two buffers alternate
}

TEST(ArenaPlanner, AnInputReadByALaterLayerIsNotOverwritten) {
  const Shape s{8};
  // v1 = f(v0); v2 = g(v1); v3 = v1 + v2: g must not write over v1.
  std::vector<PlanValue> v{graph_input(s), arena_value(s), arena_value(s), arena_value(s, true)};
  std::vector<PlanLayer> l{unary(0, 1), unary(1, 2), PlanLayer{{1, 2}, {3}, false, true}};
  ActivationPlan p = plan_activations(v, l, true);
  EXPECT_EQ(p.in_place_input[1], -1);
  EXPECT_EQ(p.in_place_input[2], 1);  // the add may take v1 (both die there)
  EXPECT_NE(p.offset[1], p.offset[2]);
}

TEST(ArenaPlanner, InitializersGraphOutputsAndViewsOfInputsAreNeverReused) {
  const Shape s{8};
  std::vector<PlanValue> v{graph_input(s), PlanValue{Home::Initializer, DType::Float32, s, 0, false},
                           arena_value(s), arena_value(s, true), arena_value(s, true), arena_value(s, true)};
  std::vector<PlanLayer> l{
      PlanLayer{{0}, {2}, true, false},  // v2 = Reshape(v0): a view of the graph input
      unary(2, 3),                       // over a view of an input: no
      unary(1, 4),                       // over an initializer: no
      unary(3, 5),                       // over a graph output (v3): no
  };
  ActivationPlan p = plan_activations(v, l, true);
  EXPECT_EQ(p.in_place_layers, 0);
  EXPECT_EQ(p.root[2], 0);
}

TEST(ArenaPlanner, ShapeDtypeAndSizeMustMatch) {
  std::vector<PlanValue> v{graph_input({8}), arena_value({8}), arena_value({2, 8}, true), arena_value({8}),
                           arena_value({8}, true)};
  v[3].dtype = DType::Int32;
  std::vector<PlanLayer> l{unary(0, 1), PlanLayer{{1, 0}, {2}, false, true},  // broadcast: bigger output
                           unary(0, 3), unary(3, 4)};                            // int32 -> float32
  ActivationPlan p = plan_activations(v, l, true);
  EXPECT_EQ(p.in_place_layers, 0);
}

TEST(ArenaPlanner, ThroughAViewOfADyingBuffer) {
  // v1 = f(v0) [2, 8]; v2 = Reshape(v1) [16]; v3 = relu(v2): v3 takes v1's buffer.
  std::vector<PlanValue> v{graph_input({2, 8}), arena_value({2, 8}), arena_value({16}), arena_value({16}, true)};
  std::vector<PlanLayer> l{unary(0, 1), PlanLayer{{1}, {2}, true, false}, unary(2, 3)};
  ActivationPlan p = plan_activations(v, l, true);
  EXPECT_EQ(p.in_place_input[2], 2);
  EXPECT_EQ(p.root[3], 1);
  EXPECT_EQ(p.offset[3], p.offset[1]);
}

TEST(ArenaPlanner, TwoNamesOfOneBufferInOneLayerBlockIt) {
  // v3 = Add(v1, Reshape(v1)) with [1, 8] and [8]: the view reads v1's bytes too.
  std::vector<PlanValue> v{graph_input({1, 8}), arena_value({1, 8}), arena_value({8}), arena_value({1, 8}, true)};
  std::vector<PlanLayer> l{unary(0, 1), PlanLayer{{1}, {2}, true, false}, PlanLayer{{1, 2}, {3}, false, true}};
  EXPECT_EQ(plan_activations(v, l, true).in_place_layers, 0);
}

TEST(ArenaPlanner, KernelsThatDoNotClaimInPlaceNeverGetIt) {
  const Shape s{8};
  std::vector<PlanValue> v{graph_input(s), arena_value(s), arena_value(s, true)};
  std::vector<PlanLayer> l{unary(0, 1), unary(1, 2, false)};
  EXPECT_EQ(plan_activations(v, l, true).in_place_layers, 0);
}

// v4 = FusedConv(x=v1, w, b, residual=v2), all of one shape, v1 and v2 dying there: the
// convolution reads x's neighbours, so only the residual may give its buffer.
TEST(ArenaPlanner, ALayerLimitedToOneInputTakesOnlyThatOne) {
  const Shape s{1, 4, 3, 3};
  std::vector<PlanValue> v{graph_input(s), arena_value(s), arena_value(s), PlanValue{Home::Initializer, DType::Float32, {4, 4, 3, 3}, 0, false},
                           arena_value(s, true)};
  PlanLayer conv{{1, 3, -1, 2}, {4}, false, true, 3};
  std::vector<PlanLayer> l{unary(0, 1), unary(0, 2, false), conv};
  ActivationPlan p = plan_activations(v, l, true);
  EXPECT_EQ(p.in_place_input[2], 2);
  EXPECT_EQ(p.offset[4], p.offset[2]);
  // Input 0 alone, though it dies there too and has the shape: not allowed.
  conv.in_place_only = 0;
  l[2] = conv;
  EXPECT_EQ(plan_activations(v, l, true).in_place_input[2], 1);
  // The residual read as x too (conv(v1) + v1): its neighbours are still read, no reuse.
  l[2] = PlanLayer{{1, 3, -1, 1}, {4}, false, true, 3};
  EXPECT_EQ(plan_activations(v, l, true).in_place_layers, 0);
}

// Whole models: in place on and off give the same bits, no more arena, and agree with the
// reference.
void expect_same_outputs_no_more_memory(const std::string& model, FusionLevel level) {
  SCOPED_TRACE(model);
  LoadedModel m = load_model(model);
  BuildConfig on;
  on.fusion = level;
  on.batch = 2;
  BuildConfig off = on;
  off.in_place = false;
  auto e_on = build_engine(m.graph, on);
  auto e_off = build_engine(m.graph, off);
  EXPECT_LE(e_on->arena_bytes(), e_off->arena_bytes());  // the peak may lie where nothing is in place
  EXPECT_TRUE(test::log_mentions(*e_on, "in-place reuse:"));
  ReferenceExecutor ref(m.graph, on.batch);
  auto inputs = make_inputs(m.graph, ref.input_shapes(), 5);
  e_on->run(inputs);
  e_off->run(inputs);
  const std::vector<Tensor> a = e_on->outputs(), b = e_off->outputs();
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    ASSERT_EQ(a[k].nbytes(), b[k].nbytes());
    EXPECT_EQ(std::memcmp(a[k].raw(), b[k].raw(), a[k].nbytes()), 0) << m.graph.outputs[k];
  }
  test::expect_agrees(m.graph, on);
}

TEST(ArenaInPlace, BertOutputsUnchanged) {
  expect_same_outputs_no_more_memory("zoo:bert?heads=2&hidden=32&layers=2&seq=8", FusionLevel::Aggressive);
  expect_same_outputs_no_more_memory("zoo:bert?heads=2&hidden=32&layers=2&seq=8", FusionLevel::None);
}

TEST(ArenaInPlace, ResnetOutputsUnchanged) {
  // At standard the residual Adds ride on the convolutions, which sum them where they lie.
  expect_same_outputs_no_more_memory("zoo:resnet?blocks=1&image=16&stages=2&width=8", FusionLevel::Standard);
  expect_same_outputs_no_more_memory("zoo:resnet?blocks=1&image=16&stages=2&width=8", FusionLevel::Aggressive);
  expect_same_outputs_no_more_memory("zoo:resnet?blocks=1&image=16&stages=2&width=8", FusionLevel::None);
}

TEST(ArenaInPlace, VitOutputsUnchanged) {
  expect_same_outputs_no_more_memory("zoo:vit?classes=5&heads=2&hidden=32&image=16&layers=2&patch=4",
                                       FusionLevel::Standard);
}

TEST(ArenaInPlace, MarkAllKeepsEveryTensorSoNothingIsReused) {
  LoadedModel m = load_model("zoo:mlp?hidden=16&in=8&layers=2&out=4");
  BuildConfig cfg;
  cfg.fusion = FusionLevel::MarkAll;
  auto e = build_engine(m.graph, cfg);
  EXPECT_FALSE(test::log_mentions(*e, "in-place reuse:"));
}

}  // namespace
}  // namespace fb
