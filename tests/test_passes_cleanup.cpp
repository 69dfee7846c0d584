// Identity/Dropout elimination and dead-node elimination: the nodes go, their readers read
// the right values, output names survive, exclusions and partition points keep them, and
// the plans agree with the reference.
#include <gtest/gtest.h>

#include "engine/zoo/onnx_builder.h"
#include "tests/pass_test_support.h"

namespace fb {
namespace {

using test::count_kind;
using test::expect_agrees;
using test::log_mentions;

// x ─▶ Relu ─▶ Identity ─▶ Dropout ─▶ Mul(·, x) ─▶ Identity ─▶ y (a graph output)
Graph pass_through_graph() {
  zoo::OnnxBuilder b("cleanup", "cleanup");
  const std::string x = b.input("x", {zoo::kBatch, 6});
  std::string v = b.node("/a", "Relu", {x});
  v = b.node("/a", "Identity", {v});
  v = b.node("/drop", "Dropout", {v});
  v = b.node("/a", "Mul", {v, x});
  v = b.node("/out", "Identity", {v});
  b.output(v, "y", {zoo::kBatch, 6});
  return import_onnx(b.finish(), "cleanup", "");
}

TEST(IdentityElimination, RemovesIdentityAndInferenceDropoutKeepingTheOutputName) {
  const Graph g = pass_through_graph();
  BuildConfig cfg;
  cfg.batch = 2;
  auto e = build_engine(g, cfg);
  EXPECT_EQ(count_kind(*e, "Identity"), 0);
  EXPECT_EQ(count_kind(*e, "Dropout"), 0);
  // What is left, Relu and Mul, became one chain that writes the output under its name.
  ASSERT_EQ(e->layers().size(), 1u);
  EXPECT_EQ(e->layers()[0].kind, "fusebench.ElementwiseChain");
  EXPECT_EQ(e->graph().nodes[0].outputs[0], "y");
  EXPECT_TRUE(log_mentions(*e, "identity-elimination: removed '/drop/Dropout' (Dropout)"));
  EXPECT_TRUE(log_mentions(*e, "after identity-elimination: 2 layers (3 rewrites)"));
  expect_agrees(g, cfg);
}

TEST(IdentityElimination, ExcludedOpTypeAndNodeGlobKeepTheirNodes) {
  const Graph g = pass_through_graph();
  BuildConfig cfg;
  cfg.exclude_op_types = {"Identity"};
  auto e = build_engine(g, cfg);
  EXPECT_EQ(count_kind(*e, "Identity"), 2);
  EXPECT_EQ(count_kind(*e, "Dropout"), 0);
  expect_agrees(g, cfg);

  BuildConfig by_name;
  by_name.exclude_nodes = {"/drop/*"};
  auto e2 = build_engine(g, by_name);
  EXPECT_EQ(count_kind(*e2, "Identity"), 0);
  EXPECT_EQ(count_kind(*e2, "Dropout"), 1);
  expect_agrees(g, by_name);
}

TEST(IdentityElimination, PartitionPointKeepsTheTensorItNames) {
  const Graph g = pass_through_graph();
  BuildConfig cfg;
  cfg.partition_points = {"/a/Identity_output_0"};
  auto e = build_engine(g, cfg);
  EXPECT_EQ(count_kind(*e, "Identity"), 1);
  bool found = false;
  for (const Node& n : e->graph().nodes) found = found || (!n.outputs.empty() && n.outputs[0] == "/a/Identity_output_0");
  EXPECT_TRUE(found);
  expect_agrees(g, cfg);
}

TEST(IdentityElimination, IdentityFromAGraphInputToAnOutputStays) {
  zoo::OnnxBuilder b("io", "io");
  const std::string x = b.input("x", {zoo::kBatch, 4});
  b.output(b.node("/i", "Identity", {x}), "y", {zoo::kBatch, 4});
  const Graph g = import_onnx(b.finish(), "io", "");
  BuildConfig cfg;
  auto e = build_engine(g, cfg);
  ASSERT_EQ(e->layers().size(), 1u);
  EXPECT_EQ(e->layers()[0].kernel, "view");
  expect_agrees(g, cfg);
}

TEST(IdentityElimination, TrainingModeDropoutStays) {
  zoo::OnnxBuilder b("train", "train");
  const std::string x = b.input("x", {zoo::kBatch, 4});
  const std::string y = b.node("/d", "Dropout", {x, b.scalar("ratio", 0.25f), "training_mode"});
  b.output(b.node("/r", "Relu", {y}), "y", {zoo::kBatch, 4});
  onnx::ModelProto model = b.finish();
  onnx::TensorProto* t = model.mutable_graph()->add_initializer();
  t->set_name("training_mode");
  t->set_data_type(onnx::TensorProto::BOOL);
  t->add_int32_data(1);
  const Graph g = import_onnx(model, "train", "");
  auto e = build_engine(g, BuildConfig{});
  EXPECT_EQ(count_kind(*e, "Dropout"), 1);  // random at run time: not ours to remove
}

// x ─▶ Relu ─▶ y, with dead branches x ─▶ Sin ─▶ Cos and x ─▶ Add(·, w) ─▶ Exp.
Graph dead_branch_graph() {
  zoo::OnnxBuilder b("dead", "dead");
  const std::string x = b.input("x", {zoo::kBatch, 4});
  b.node("/dead", "Cos", {b.node("/dead", "Sin", {x})});
  b.node("/dead", "Exp", {b.node("/dead", "Add", {x, b.weight("unused_weight", {4}, 1.f)})});
  b.output(b.node("/live", "Relu", {x}), "y", {zoo::kBatch, 4});
  return import_onnx(b.finish(), "dead", "");
}

TEST(DeadNodeElimination, RemovesUnreadNodesAndTheirInitializers) {
  const Graph g = dead_branch_graph();
  BuildConfig cfg;
  auto e = build_engine(g, cfg);
  ASSERT_EQ(e->layers().size(), 1u);
  EXPECT_EQ(e->layers()[0].kind, "Relu");
  EXPECT_EQ(e->graph().initializers.count("unused_weight"), 0u);
  EXPECT_TRUE(log_mentions(*e, "dead-node-elimination: removed 4 nodes"));
  expect_agrees(g, cfg);
}

TEST(DeadNodeElimination, ExcludedNodesStayAndKeepTheirInputsAlive) {
  const Graph g = dead_branch_graph();
  BuildConfig cfg;
  cfg.exclude_op_types = {"Cos"};
  auto e = build_engine(g, cfg);
  EXPECT_EQ(count_kind(*e, "Cos"), 1);
  EXPECT_EQ(count_kind(*e, "Sin"), 1);  // Cos reads it
  EXPECT_EQ(count_kind(*e, "Exp"), 0);
  BuildConfig glob;
  glob.exclude_nodes = {"/dead/Exp"};
  auto e2 = build_engine(g, glob);
  EXPECT_EQ(count_kind(*e2, "Exp"), 1);
  EXPECT_EQ(count_kind(*e2, "Add"), 1);  // Exp reads it, and it reads the weight
  EXPECT_EQ(e2->graph().initializers.count("unused_weight"), 1u);
  expect_agrees(g, glob);
}

TEST(DeadNodeElimination, FusionNoneKeepsEveryNode) {
  const Graph g = dead_branch_graph();
  BuildConfig cfg;
  cfg.fusion = FusionLevel::None;
  auto e = build_engine(g, cfg);
  EXPECT_EQ(e->layers().size(), g.nodes.size());
}

}  // namespace
}  // namespace fb
