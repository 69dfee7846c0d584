// GELU in its tanh form: the exporters' three groupings become one fusebench.GeluTanh,
// a MatMul + bias + GeluTanh becomes one oneDNN matmul with a gelu_tanh post-op, and
// exclusions, partition points and outside readers stop the rewrite.
#include <gtest/gtest.h>

#include "engine/zoo/onnx_builder.h"
#include "tests/pass_test_support.h"

namespace fb {
namespace {

using test::count_kind;
using test::expect_agrees;
using test::find_kind;

enum class Form {
  TorchExport,  // 0.5 · (x · (1 + tanh(β · (x + κ · (x · (x · x))))))   torch.onnx, approximate="tanh"
  NewGelu,      // (0.5 · x) · (1 + tanh(β · (x + κ · Pow(x, 3))))        Hugging Face gelu_new
  HalfFirst,    // ((1 + tanh(...)) · 0.5) · x
};

std::string gelu_tanh(zoo::OnnxBuilder& b, const std::string& x, Form form) {
  const std::string sc = "/act";
  std::string cube;
  if (form == Form::NewGelu) {
    cube = b.node(sc, "Pow", {x, b.scalar("three", 3.f)});
  } else {
    cube = b.node(sc, "Mul", {x, b.node(sc, "Mul", {x, x})});
  }
  std::string inner = b.node(sc, "Mul", {b.scalar("kappa", 0.044715f), cube});
  inner = b.node(sc, "Add", {x, inner});
  inner = b.node(sc, "Mul", {b.scalar("beta", 0.7978845608f), inner});
  const std::string u = b.node(sc, "Add", {b.scalar("one", 1.f), b.node(sc, "Tanh", {inner})});
  const std::string half = b.scalar("half", 0.5f);
  switch (form) {
    case Form::TorchExport: return b.node(sc, "Mul", {half, b.node(sc, "Mul", {x, u})});
    case Form::NewGelu: return b.node(sc, "Mul", {b.node(sc, "Mul", {half, x}), u});
    case Form::HalfFirst: return b.node(sc, "Mul", {b.node(sc, "Mul", {u, half}), x});
  }
  return "";
}

// x [batch, 5, 16] ─▶ GELU(tanh) ─▶ y
Graph activation_graph(Form form) {
  zoo::OnnxBuilder b("gelu_tanh", "gelu_tanh");
  const std::string x = b.input("x", {zoo::kBatch, 5, 16});
  b.output(gelu_tanh(b, x, form), "y", {zoo::kBatch, 5, 16});
  return import_onnx(b.finish(), "gelu_tanh", "");
}

TEST(GeluTanhFusion, EachExportedFormBecomesOneLayer) {
  for (Form form : {Form::TorchExport, Form::NewGelu, Form::HalfFirst}) {
    SCOPED_TRACE(int(form));
    const Graph g = activation_graph(form);
    BuildConfig cfg;
    cfg.batch = 2;
    auto e = build_engine(g, cfg);
    ASSERT_EQ(count_kind(*e, "fusebench.GeluTanh"), 1);
    EXPECT_EQ(count_kind(*e, "Tanh"), 0);
    EXPECT_EQ(find_kind(*e, "fusebench.GeluTanh")->sources.size(), g.nodes.size());
    expect_agrees(g, cfg);
  }
}

TEST(GeluTanhFusion, MatMulBiasGeluTanhIsOneOneDnnLayer) {
  zoo::OnnxBuilder b("ffn", "ffn");
  std::string x = b.input("x", {zoo::kBatch, 4, 16});
  x = zoo::linear(b, "/dense", "dense", x, 16, 32);
  b.output(gelu_tanh(b, x, Form::TorchExport), "y", {zoo::kBatch, 4, 32});
  const Graph g = import_onnx(b.finish(), "ffn", "");
  BuildConfig cfg;
  cfg.batch = 3;
  auto e = build_engine(g, cfg);
  ASSERT_EQ(e->layers().size(), 1u);
  EXPECT_EQ(e->layers()[0].kind, "fusebench.FusedMatMul");
  EXPECT_EQ(e->layers()[0].kernel, "onednn.matmul+bias+gelu_tanh");
  EXPECT_EQ(e->layers()[0].sources.size(), g.nodes.size());
  expect_agrees(g, cfg);
}

TEST(GeluTanhFusion, ExclusionsAndPartitionPointsStopIt) {
  const Graph g = activation_graph(Form::TorchExport);
  BuildConfig by_op;
  by_op.exclude_op_types = {"Tanh"};
  BuildConfig by_name;
  by_name.exclude_nodes = {"/act/Add_1"};  // the 1 + tanh
  BuildConfig by_point;
  by_point.partition_points = {"/act/Tanh_output_0"};
  for (const BuildConfig& cfg : {by_op, by_name, by_point}) {
    auto e = build_engine(g, cfg);
    EXPECT_EQ(count_kind(*e, "fusebench.GeluTanh"), 0);
    expect_agrees(g, cfg);
  }
}

TEST(GeluTanhFusion, AnIntermediateReadElsewhereStopsIt) {
  zoo::OnnxBuilder b("leak", "leak");
  const std::string x = b.input("x", {zoo::kBatch, 8});
  const std::string y = gelu_tanh(b, x, Form::NewGelu);
  b.output(y, "y", {zoo::kBatch, 8});
  b.output("/act/Tanh_output_0", "t", {zoo::kBatch, 8});  // the tanh is wanted too
  const Graph g = import_onnx(b.finish(), "leak", "");
  auto e = build_engine(g, BuildConfig{});
  EXPECT_EQ(count_kind(*e, "fusebench.GeluTanh"), 0);
  expect_agrees(g, BuildConfig{});
}

TEST(GeluTanhFusion, WrongConstantIsNotGelu) {
  zoo::OnnxBuilder b("near", "near");
  const std::string x = b.input("x", {zoo::kBatch, 8});
  // β = 0.8 instead of √(2/π): a different function, left as it is.
  const std::string cube = b.node("/a", "Pow", {x, b.scalar("three", 3.f)});
  const std::string inner = b.node("/a", "Add", {x, b.node("/a", "Mul", {b.scalar("kappa", 0.044715f), cube})});
  const std::string t = b.node("/a", "Tanh", {b.node("/a", "Mul", {inner, b.scalar("beta", 0.8f)})});
  const std::string half_x = b.node("/a", "Mul", {x, b.scalar("half", 0.5f)});
  const std::string y = b.node("/a", "Mul", {half_x, b.node("/a", "Add", {t, b.scalar("one", 1.f)})});
  b.output(y, "y", {zoo::kBatch, 8});
  const Graph g = import_onnx(b.finish(), "near", "");
  auto e = build_engine(g, BuildConfig{});
  EXPECT_EQ(count_kind(*e, "fusebench.GeluTanh"), 0);
  expect_agrees(g, BuildConfig{});
}

}  // namespace
}  // namespace fb
