// The kernel backend and the per-engine op registry: an engine's registry can be extended
// before it is sealed and not after; a registered op (as a plugin registers one) is built
// and run through the CPU backend; every node carries its precision and why, through
// fusion and through a plan; the CPU backend's allocations and support answers.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <set>

#include "engine/backend/backend.h"
#include "engine/builder/builder.h"
#include "engine/plan/plan_format.h"
#include "engine/reference/reference_executor.h"
#include "harness/cases/calibration.h"
#include "harness/cases/model_source.h"
#include "tests/resnet_block_model.h"

namespace fb {
namespace {

// y = x · 3, as an op no ONNX model has (a plugin's).
void compute_triple(OpContext& c) {
  const Tensor& x = c.in(0);
  float* y = c.out(0).data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) y[i] = 3.f * x.data<float>()[i];
}
std::vector<ValueInfo> infer_same(const ShapeContext& c) { return {c.in(0)}; }

Graph triple_graph() {
  Graph g;
  g.name = "triple";
  g.opset = 17;
  g.inputs.push_back(GraphInput{"x", DType::Float32, {2, 3}, {"", ""}});
  g.values["x"] = ValueInfo{DType::Float32, {2, 3}, true};
  Node n;
  n.name = "t";
  n.op_type = "Triple";
  n.domain = "example";
  n.inputs = {"x"};
  n.outputs = {"y"};
  n.sources = {"t"};
  g.nodes.push_back(n);
  g.outputs = {"y"};
  return g;
}

std::shared_ptr<const OpRegistry> registry_with_triple() {
  auto r = std::make_shared<OpRegistry>(OpRegistry::with_builtin_ops());
  r->add(OpDef{"example", "Triple", infer_same, compute_triple});
  r->seal();
  return r;
}

TEST(OpRegistry, ExtendedBeforeSealRefusedAfter) {
  OpRegistry r = OpRegistry::with_builtin_ops();
  EXPECT_NE(r.find("", "MatMul"), nullptr);
  EXPECT_NE(r.find("ai.onnx", "MatMul"), nullptr);
  EXPECT_EQ(r.find("example", "Triple"), nullptr);
  r.add(OpDef{"example", "Triple", infer_same, compute_triple});
  EXPECT_NE(r.find("example", "Triple"), nullptr);
  try {
    r.add(OpDef{"example", "Triple", infer_same, compute_triple});
    FAIL() << "a second registration was accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "op 'example.Triple' is registered already");
  }
  r.seal();
  try {
    r.add(OpDef{"example", "Quadruple", infer_same, compute_triple});
    FAIL() << "a sealed registry was extended";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "op 'example.Quadruple' cannot be registered: the op registry is sealed (register before building)");
  }
  EXPECT_TRUE(OpRegistry::builtin()->sealed());
  EXPECT_EQ(OpRegistry::builtin()->find("example", "Triple"), nullptr);  // another engine's op is not everyone's
}

TEST(OpRegistry, EngineRunsAnOpRegisteredInItsOwnRegistry) {
  const Graph g = triple_graph();
  BuildConfig cfg;
  EXPECT_THROW(build_engine(g, cfg), Error);  // the shipped registry does not know it
  auto open = std::make_shared<OpRegistry>(OpRegistry::with_builtin_ops());
  EXPECT_THROW(build_engine(g, cfg, EngineKernels{open, backend_named("cpu")}), Error);  // not sealed
  auto engine = build_engine(g, cfg, EngineKernels{registry_with_triple(), backend_named("cpu")});
  ASSERT_EQ(engine->layers().size(), 1u);
  EXPECT_EQ(engine->layers()[0].kernel, "example.Triple");
  Tensor x(DType::Float32, {2, 3});
  for (int i = 0; i < 6; ++i) x.data<float>()[i] = float(i) - 2.f;
  engine->run({x});
  const Tensor y = engine->outputs()[0];
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y.data<float>()[i], 3.f * (float(i) - 2.f));
  ReferenceExecutor ref(g, 1, {}, registry_with_triple());
  EXPECT_EQ(ref.run({x})[0].data<float>()[5], 9.f);
}

TEST(Precision, EveryLayerSaysItsPrecisionAndWhyThroughFusionAndPlans) {
  LoadedModel m = load_model("zoo:bert?layers=1&hidden=64&heads=2&seq=16");
  BuildConfig cfg;
  cfg.fusion = FusionLevel::Aggressive;
  auto engine = build_engine(m.graph, cfg);
  ASSERT_FALSE(engine->layers().empty());
  for (const LayerInfo& l : engine->layers()) EXPECT_EQ(l.precision, fb::Precision::FP32) << l.name;
  for (const Node& n : engine->graph().nodes) {
    EXPECT_EQ(n.precision, Precision::FP32) << n.name;
    EXPECT_EQ(n.precision_reason, "default") << n.name;
  }
  const Plan plan = make_plan(*engine, m.reference, m.source_model(), m.base_dir);
  const Plan back = parse_plan(serialize_plan(plan), "bert.plan");
  ASSERT_EQ(back.optimized.nodes.size(), engine->graph().nodes.size());
  for (const Node& n : back.optimized.nodes) EXPECT_EQ(n.precision_reason, "default") << n.name;
}

TEST(Precision, NamesRoundTripAndUnknownOnesAreRefused) {
  for (Precision p : {Precision::FP32, Precision::FP16, Precision::BF16, Precision::INT8})
    EXPECT_EQ(parse_precision(precision_name(p)), p);
  EXPECT_THROW(parse_precision("fp64"), Error);
  EXPECT_EQ((PrecisionSet{Precision::FP32, Precision::BF16}).str(), "fp32, bf16");
  EXPECT_TRUE(OpRegistry::builtin()->find("", "MatMul")->precisions.contains(Precision::FP32));
  EXPECT_FALSE(OpRegistry::builtin()->find("", "MatMul")->precisions.contains(Precision::BF16));
}

// The CPU backend under another name, for a test to change what it answers.
class CpuWithOtherAnswers : public Backend {
 public:
  Device device() const override { return cpu_->device(); }
  PrecisionSet supported_precisions(const Node& node, const OpDef& def) const override {
    return cpu_->supported_precisions(node, def);
  }
  std::unique_ptr<Layer> make_layer(const LayerRequest& r) const override { return cpu_->make_layer(r); }
  DeviceBuffer allocate(size_t bytes) const override { return cpu_->allocate(bytes); }
  Tensor upload(const Tensor& host) const override { return cpu_->upload(host); }
  void synchronize() const override {}
  void copy_to_device(void* dst, const void* src, size_t n) const override { cpu_->copy_to_device(dst, src, n); }
  void copy_to_host(void* dst, const void* src, size_t n) const override { cpu_->copy_to_host(dst, src, n); }
  Tensor to_host(const Tensor& t) const override { return cpu_->to_host(t); }
  bool runs_channels_last(const Node& node, Precision build_precision) const override {
    return cpu_->runs_channels_last(node, build_precision);
  }


 protected:
  std::shared_ptr<const Backend> cpu_ = backend_named("cpu");
};

// The CPU backend with int8 kernels for convolutions only: what precision lowering asks.
class ConvOnlyInt8 : public CpuWithOtherAnswers {
 public:
  std::string name() const override { return "conv-only-int8"; }
  PrecisionSet supported_precisions(const Node& node, const OpDef& def) const override {
    const PrecisionSet cpu = cpu_->supported_precisions(node, def);
    const bool conv = node.op_type == "Conv" || node.op_type == "FusedConv";
    PrecisionSet s;
    for (Precision p : {Precision::FP32, Precision::BF16, Precision::FP16, Precision::INT8})
      if (cpu.contains(p) && (p != Precision::INT8 || conv)) s.insert(p);
    return s;
  }
};

TEST(Backend, PrecisionLoweringAsksTheBackendWhichOpsRunInInt8) {
  const LoadedModel m = load_model("zoo:resnet?blocks=1&width=8&image=16");
  BuildConfig cfg;
  cfg.precision = fb::Precision::INT8;
  calibrate_for_int8(m, m.graph, cfg);
  ConvOnlyInt8 backend;
  std::vector<std::string> log;
  const Graph g = optimize_graph(m.graph, cfg, &log, *OpRegistry::builtin(), nullptr, &backend);
  int int8_convs = 0, fp32_products = 0;
  for (const Node& n : g.nodes) {
    if (n.op_type == "FusedConv" && n.precision == Precision::INT8) ++int8_convs;
    if (n.op_type == "FusedMatMul") {
      EXPECT_EQ(n.precision, Precision::FP32);
      EXPECT_EQ(n.precision_reason, "fallback from int8: no int8 kernel for FusedMatMul");
      ++fp32_products;
    }
  }
  EXPECT_GT(int8_convs, 0);
  EXPECT_EQ(fp32_products, 1);  // the classifier; on the CPU backend it runs int8
  const Graph on_cpu = optimize_graph(m.graph, cfg, &log);
  for (const Node& n : on_cpu.nodes)
    if (n.op_type == "FusedMatMul") {
      EXPECT_EQ(n.precision, Precision::INT8);
    }
}

// The CPU backend as a GPU's would answer for tf32: matrix products only.
class MatMulTf32 final : public CpuWithOtherAnswers {
 public:
  std::string name() const override { return "matmul-tf32"; }
  PrecisionSet supported_precisions(const Node& node, const OpDef& def) const override {
    PrecisionSet s = cpu_->supported_precisions(node, def);
    if (node.op_type == "MatMul" || node.op_type == "Gemm" || node.op_type == "FusedMatMul") s.insert(Precision::TF32);
    return s;
  }
  bool runs_channels_last(const Node&, Precision) const override { return false; }
};

// tf32 is a math mode for matrix products: those keep it where the backend has a tf32
// kernel, with float32 tensors (no Convert layers); every other layer runs fp32 and says
// why. The CPU has no tf32 kernel at all, so a tf32 build there is refused by name.
TEST(Backend, Tf32KeepsTheMatrixProductsAndRefusesABackendWithoutIt) {
  BuildConfig cfg;
  cfg.precision = fb::Precision::TF32;
  cfg.fusion = FusionLevel::Aggressive;
  MatMulTf32 backend;
  std::vector<std::string> log;
  const Graph g = optimize_graph(load_model("zoo:mlp").graph, cfg, &log, *OpRegistry::builtin(), nullptr, &backend);
  int tf32 = 0;
  for (const Node& n : g.nodes) {
    EXPECT_NE(n.op_type, "Convert") << "tf32 keeps float32 tensors";
    if (n.op_type == "FusedMatMul" || n.op_type == "Gemm") {
      EXPECT_EQ(n.precision, Precision::TF32) << n.describe();
      ++tf32;
    } else if (n.precision_reason != "view of its input") {
      EXPECT_EQ(n.precision, Precision::FP32) << n.describe();
      EXPECT_EQ(n.precision_reason, "fallback from tf32: no tf32 kernel for " + n.op_type) << n.describe();
    }
  }
  EXPECT_GT(tf32, 0);
  EXPECT_NE(std::find(log.begin(), log.end(), "precision: " + std::to_string(tf32) +
                                                  " tf32 layer(s): float32 tensors, products on tensor cores with 10-bit mantissas"),
            log.end());
  try {
    optimize_graph(load_model("zoo:mlp").graph, cfg, &log);
    FAIL() << "a tf32 build on the CPU";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("precision 'tf32': no layer can run in tf32 on the cpu backend"), std::string::npos)
        << e.what();
  }
}

// A backend without a kernel for a fused form: the CPU's, less FusedMatMul and channels-last.
class NoFusedMatMul final : public CpuWithOtherAnswers {
 public:
  std::string name() const override { return "no-fused-matmul"; }
  PrecisionSet supported_precisions(const Node& node, const OpDef& def) const override {
    return node.op_type == "FusedMatMul" ? PrecisionSet{} : cpu_->supported_precisions(node, def);
  }
  bool runs_channels_last(const Node&, Precision) const override { return false; }
};

// Passes ask the build's backend instead of naming one: a fused form it has no kernel for
// is refused by can_fuse, saying so as a fusion event, and the convolutions stay plain
// NCHW where it keeps no channels-last layout; the CPU backend fuses and lays out both.
TEST(Backend, FusionAndLayoutAskTheBackend) {
  BuildConfig cfg;
  cfg.fusion = FusionLevel::Aggressive;
  NoFusedMatMul backend;
  std::vector<std::string> log;
  std::vector<FusionEvent> events;
  const Graph mlp = optimize_graph(load_model("zoo:mlp").graph, cfg, &log, *OpRegistry::builtin(), &events, &backend);
  for (const Node& n : mlp.nodes) EXPECT_NE(n.op_type, "FusedMatMul");
  const bool said = std::any_of(events.begin(), events.end(), [](const FusionEvent& e) {
    return e.refused.find("the no-fused-matmul backend has no fp32 kernel for fusebench.FusedMatMul") != std::string::npos;
  });
  EXPECT_TRUE(said);
  const Graph resnet = optimize_graph(load_model("zoo:resnet?blocks=1&width=8&image=16").graph, cfg, &log,
                                      *OpRegistry::builtin(), nullptr, &backend);
  for (const Node& n : resnet.nodes) EXPECT_FALSE(n.has_attr("x_layout") || n.has_attr("y_layout")) << n.describe();
  const Graph on_cpu = optimize_graph(load_model("zoo:mlp").graph, cfg, &log);
  EXPECT_TRUE(std::any_of(on_cpu.nodes.begin(), on_cpu.nodes.end(), [](const Node& n) { return n.op_type == "FusedMatMul"; }));
  const Graph resnet_cpu = optimize_graph(load_model("zoo:resnet?blocks=1&width=8&image=16").graph, cfg, &log);
  EXPECT_TRUE(std::any_of(resnet_cpu.nodes.begin(), resnet_cpu.nodes.end(),
                          [](const Node& n) { return n.has_attr("y_layout"); }));
}

// The CPU backend running channels-last only the op types it is given (as a GPU's may).
class ChannelsLastOnly final : public CpuWithOtherAnswers {
 public:
  explicit ChannelsLastOnly(std::set<std::string> ops) : ops_(std::move(ops)) {}
  std::string name() const override { return "some-layouts"; }
  bool runs_channels_last(const Node& node, Precision) const override { return ops_.count(node.op_type) > 0; }

 private:
  std::set<std::string> ops_;
};

// Per op type, the nodes carrying a layout.
std::map<std::string, int> laid_out(const Graph& g) {
  std::map<std::string, int> n;
  for (const Node& node : g.nodes)
    n[node.op_type] += node.has_attr("x_layout") || node.has_attr("y_layout") || node.has_attr("residual_layout");
  std::erase_if(n, [](const auto& kv) { return kv.second == 0; });
  return n;
}

// The conv-layout pass asks the backend of every node it could mark and marks only those it
// answers yes for; a value whose writer or some reader is declined stays plain, and so does
// everything tied to it (an Add's inputs, a pool's output). It runs before precision
// lowering, so an fp16 build is laid out as the fp32 one.
TEST(Backend, ConvLayoutMarksOnlyWhatTheBackendRunsChannelsLast) {
  const Graph block = test::resnet_style_block();
  BuildConfig cfg;
  cfg.fusion = FusionLevel::Standard;
  const std::set<std::string> all{"Conv", "FusedConv", "MaxPool", "AveragePool", "Add", "GlobalAveragePool"};
  // stem, block.conv1, block.conv2 (residual), dw, pw, head; the pool, the sum, both pools.
  const std::map<std::string, int> full{
      {"FusedConv", 6}, {"MaxPool", 1}, {"Add", 1}, {"AveragePool", 1}, {"GlobalAveragePool", 1}};
  // The sum declined (or a pool after it): dw and pw read s channels-last and write plain.
  const std::map<std::string, int> up_to_the_sum{{"FusedConv", 5}, {"MaxPool", 1}};
  struct Case {
    std::set<std::string> declined;
    std::map<std::string, int> marked;
    std::string log;  // what the build log says of the declined
  };
  const Case cases[] = {
      {{}, full, ""},
      // The stem's output is read by the pool only: the stem is plain, block.conv1 reads plain.
      {{"MaxPool"}, {{"FusedConv", 5}, {"Add", 1}, {"AveragePool", 1}, {"GlobalAveragePool", 1}}, "runs 1 MaxPool layer(s)"},
      {{"Add"}, up_to_the_sum, "runs 1 Add layer(s)"},
      {{"AveragePool"}, up_to_the_sum, "runs 1 AveragePool layer(s)"},
      {{"GlobalAveragePool"}, up_to_the_sum, "runs 1 GlobalAveragePool layer(s)"},
      {{"Conv", "FusedConv"}, {}, "runs 5 FusedConv layer(s)"},
  };
  for (const char* precision : {"fp32", "fp16"})
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(precision) + ", declined: " + std::to_string(c.declined.size()) + " op type(s) " +
                   (c.declined.empty() ? "" : *c.declined.begin()));
      cfg.precision = fb::parse_precision(precision);
      std::set<std::string> runs;
      std::set_difference(all.begin(), all.end(), c.declined.begin(), c.declined.end(), std::inserter(runs, runs.end()));
      ChannelsLastOnly backend(runs);
      std::vector<std::string> log;
      const Graph g = optimize_graph(block, cfg, &log, *OpRegistry::builtin(), nullptr, &backend);
      EXPECT_EQ(laid_out(g), c.marked);
      const bool said = std::any_of(log.begin(), log.end(), [&](const std::string& l) {
        return l.find("conv-layout: the some-layouts backend " + c.log) != std::string::npos;
      });
      EXPECT_TRUE(c.log.empty() || said) << c.log;
      for (const Node& n : g.nodes) {
        if (n.op_type == "FusedConv") {
          EXPECT_EQ(precision_name(n.precision), precision) << n.describe();
        }
      }
    }
  // The CPU backend runs them all: its marking is the full one.
  std::vector<std::string> log;
  EXPECT_EQ(laid_out(optimize_graph(block, cfg, &log)), full);
}

TEST(Backend, CpuAnswersSupportAllocatesAndRefusesUnknownNames) {
  auto cpu = backend_named("cpu");
  EXPECT_EQ(cpu->name(), "cpu");
  EXPECT_EQ(cpu->device(), Device::Host);
  Node mm;
  mm.op_type = "MatMul";
  const OpDef& def = op_for(mm);
  EXPECT_TRUE(cpu->supports(mm, def, Precision::FP32));
  EXPECT_TRUE(cpu->supports(mm, def, Precision::INT8));  // with constant weights (precision lowering checks)
  Node sm;
  sm.op_type = "Softmax";
  EXPECT_TRUE(cpu->supports(sm, op_for(sm), Precision::BF16));
  EXPECT_FALSE(cpu->supports(sm, op_for(sm), Precision::INT8));
  Node attention;
  attention.domain = "fusebench";
  attention.op_type = "Attention";
  EXPECT_TRUE(cpu->supports(attention, op_for(attention), Precision::INT8));
  DeviceBuffer b = cpu->allocate(1000);
  EXPECT_EQ(b.bytes(), 1000u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u);
  try {
    backend_named("tpu");
    FAIL() << "an unknown backend was returned";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "unknown device 'tpu' (known: cpu, cuda, cuda:N)");
  }
}

}  // namespace
}  // namespace fb
