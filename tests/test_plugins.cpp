// The plugin mechanism inside the tree: the shipped plugins against the reference, placing
// plugins into a model, plugins as fusion barriers, failures named by plugin, the cost
// split's arithmetic and the plugin settings' JSON. (A library built outside the tree is
// tests/test_plugin_library.cpp.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "engine/builder/builder.h"
#include "engine/ops/plugin_rows.h"
#include "engine/passes/plugin_placement.h"
#include "engine/reference/reference_executor.h"
#include "engine/runtime/plugin_layer.h"
#include "harness/cases/accuracy.h"
#include "harness/cases/case.h"
#include "harness/cases/inputs.h"
#include "harness/cases/model_source.h"
#include "harness/measure/plugin_cost.h"
#include "harness/store/result_store.h"
#include "pass_test_support.h"

namespace fb {
namespace {

using test::count_kind;

const char* kBert = "zoo:bert?heads=2&hidden=32&layers=2&seq=8";
const char* kLlama = "zoo:llama?heads=2&hidden=32&layers=2&seq=8";
const std::string kSoftmax0 = "/encoder/layer.0/attention/self/Softmax_output_0";

PluginPlacement copy_after(const std::string& tensor, int64_t bytes = -1) {
  PluginPlacement p;
  p.op = "fusebench.plugin.Copy";
  p.name = "copy";
  p.after = tensor;
  if (bytes >= 0) p.attrs["bytes"] = Attribute{bytes};
  return p;
}

PluginPlacement rms_norm_replacing(const std::vector<std::string>& globs) {
  PluginPlacement p;
  p.op = "fusebench.plugin.RMSNorm";
  p.name = "rms";
  p.replace_nodes = globs;
  return p;
}

struct Outputs {
  std::vector<Tensor> engine, reference;
};

// Runs `g` in the engine and the reference with the shipped plugins.
Outputs run_both(const Graph& g, const BuildConfig& cfg, std::unique_ptr<Engine>* keep = nullptr) {
  auto ops = registry_with_plugins({});
  auto engine = build_engine(g, cfg, {ops});
  ReferenceExecutor ref(g, cfg.batch, {}, ops);
  auto inputs = make_inputs(g, ref.input_shapes(), 7);
  Outputs o;
  o.reference = ref.run(inputs);
  engine->run(inputs);
  for (const Tensor& t : engine->outputs()) o.engine.push_back(t.clone());
  if (keep) *keep = std::move(engine);
  return o;
}

std::vector<Tensor> reference_of(const Graph& g, int64_t batch) {
  ReferenceExecutor ref(g, batch);
  return ref.run(make_inputs(g, ref.input_shapes(), 7));
}

double max_abs_diff(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double m = 0;
  for (size_t k = 0; k < a.size(); ++k)
    for (int64_t i = 0; i < a[k].numel(); ++i)
      m = std::max(m, double(std::abs(a[k].data<float>()[i] - b[k].data<float>()[i])));
  return m;
}

TEST(Plugins, CopyInsideAttentionBreaksThatFusionOnlyAndChangesNoValue) {
  LoadedModel m = load_model(kBert);
  BuildConfig cfg;
  cfg.fusion = FusionLevel::Aggressive;
  std::vector<std::string> log;
  Graph g = place_plugins(m.graph, {copy_after(kSoftmax0)}, &log);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0], "plugin: 'copy' (fusebench.plugin.Copy) placed after tensor '" + kSoftmax0 + "'");
  std::unique_ptr<Engine> e;
  Outputs o = run_both(g, cfg, &e);
  EXPECT_EQ(count_kind(*e, "fusebench.Attention"), 1);  // layer 1's; layer 0's is split by the plugin
  EXPECT_EQ(count_kind(*e, "fusebench.plugin.Copy"), 1);
  const LayerInfo* copy = test::find_kind(*e, "fusebench.plugin.Copy");
  ASSERT_NE(copy, nullptr);
  EXPECT_TRUE(is_plugin_layer(*copy));
  EXPECT_EQ(copy->kernel, "plugin fusebench.plugin.Copy (built in)");
  // A copy changes nothing: both executors agree with the model without it, bit for bit
  // in the reference (same kernels, same order), and within the usual tolerance in the engine.
  const std::vector<Tensor> plain = reference_of(m.graph, 1);
  EXPECT_EQ(max_abs_diff(o.reference, plain), 0.0);
  EXPECT_LT(max_abs_diff(o.engine, plain), 1e-4);
}

TEST(Plugins, CopyOfNothingIsRightWhereTheEngineRunsItInPlace) {
  LoadedModel m = load_model(kBert);
  BuildConfig cfg;
  cfg.fusion = FusionLevel::Aggressive;
  // The softmax output dies at the plugin, so the output takes its buffer: bytes 0 is exact.
  Graph g = place_plugins(m.graph, {copy_after(kSoftmax0, 0)}, nullptr);
  std::unique_ptr<Engine> e;
  Outputs o = run_both(g, cfg, &e);
  EXPECT_TRUE(test::log_mentions(*e, "in-place reuse"));
  const std::vector<Tensor> plain = reference_of(m.graph, 1);
  EXPECT_EQ(max_abs_diff(o.reference, plain), 0.0);
  EXPECT_LT(max_abs_diff(o.engine, plain), 1e-4);
}

// A value dies at a plugin that may write over it while a Flatten's output, which shares
// its bytes, lives on: the reference executor must not hand the plugin that buffer.
TEST(Plugins, InPlacePluginLeavesAReshapedAliasOfItsInputAlone) {
  Graph g;
  g.name = "alias";
  g.opset = 17;
  g.inputs.push_back(GraphInput{"x", DType::Float32, {2, 4}, {"", ""}});
  g.values["x"] = ValueInfo{DType::Float32, {2, 4}, true};
  auto add = [&](const char* name, const char* domain, const char* op, std::string in, std::string out) {
    Node n;
    n.name = name;
    n.domain = domain;
    n.op_type = op;
    n.opset = 17;
    n.inputs = {std::move(in)};
    n.outputs = {std::move(out)};
    n.sources = {name};
    g.nodes.push_back(n);
  };
  add("relu", "", "Relu", "x", "a");
  add("flatten", "", "Flatten", "a", "f");
  add("rms", "fusebench.plugin", "RMSNorm", "a", "y");
  g.nodes[1].attrs["axis"] = Attribute{int64_t(0)};
  g.outputs = {"f", "y"};
  ReferenceExecutor ref(g, 2, {}, registry_with_plugins({}));
  Tensor x(DType::Float32, {2, 4});
  for (int64_t i = 0; i < 8; ++i) x.data<float>()[i] = float(i) - 3.f;
  const std::vector<Tensor> out = ref.run({x});
  ASSERT_EQ(out[0].shape(), (Shape{1, 8}));
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(out[0].data<float>()[i], std::max(float(i) - 3.f, 0.f)) << "element " << i;
  EXPECT_NE(out[0].raw(), out[1].raw());
}

TEST(Plugins, CopyAtTheGraphOutputKeepsTheOutputName) {
  LoadedModel m = load_model(kBert);
  Graph g = place_plugins(m.graph, {copy_after("output")}, nullptr);
  EXPECT_EQ(g.outputs, m.graph.outputs);
  EXPECT_EQ(g.nodes.back().op_type, "Copy");
  BuildConfig cfg;
  Outputs o = run_both(g, cfg);
  EXPECT_EQ(max_abs_diff(o.reference, reference_of(m.graph, 1)), 0.0);
}

TEST(Plugins, CopyAfterAGraphInputFeedsItsReaders) {
  LoadedModel m = load_model(kBert);
  Graph g = place_plugins(m.graph, {copy_after("input")}, nullptr);
  EXPECT_EQ(g.nodes.front().op_type, "Copy");
  EXPECT_EQ(g.nodes.front().outputs[0], "input.plugin");
  BuildConfig cfg;
  Outputs o = run_both(g, cfg);
  EXPECT_EQ(max_abs_diff(o.reference, reference_of(m.graph, 1)), 0.0);
}

TEST(Plugins, RmsNormReplacesEachDecomposedNormAndAgreesWithIt) {
  LoadedModel m = load_model(kLlama);
  std::vector<std::string> log;
  Graph g = place_plugins(m.graph, {rms_norm_replacing({"*layernorm/*", "/norm/*"})}, &log);
  ASSERT_EQ(log.size(), 5u);  // two per block, and the final norm
  EXPECT_EQ(log[0], "plugin: 'rms#0' (fusebench.plugin.RMSNorm) replaces 6 nodes from '/layers.0/input_layernorm/Pow' to "
                    "'/layers.0/input_layernorm/Mul'");
  int plugins = 0;
  for (const Node& n : g.nodes)
    if (n.op_type == "RMSNorm") {
      ++plugins;
      EXPECT_EQ(n.inputs.size(), 2u);  // x and the weight; the constants 2 and eps stay the pattern's
      EXPECT_EQ(n.sources.size(), 6u);
    }
  EXPECT_EQ(plugins, 5);
  BuildConfig cfg;
  std::unique_ptr<Engine> e;
  Outputs o = run_both(g, cfg, &e);
  EXPECT_EQ(count_kind(*e, "fusebench.plugin.RMSNorm"), 5);
  EXPECT_EQ(count_kind(*e, "ReduceMean"), 0);
  // 1 / sqrt in one pass vs Sqrt then Div: float rounding differs by a few ulps on O(1) values.
  const std::vector<Tensor> plain = reference_of(m.graph, 1);
  EXPECT_LT(max_abs_diff(o.reference, plain), 1e-5);
  EXPECT_LT(max_abs_diff(o.engine, plain), 1e-4);
}

TEST(Plugins, PlacementErrorsNameThePlacementAndField) {
  LoadedModel m = load_model(kBert);
  try {
    place_plugins(m.graph, {copy_after("no_such_tensor")}, nullptr);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "plugin placement 'fusebench.plugin.Copy' ('copy'): field 'after': no tensor 'no_such_tensor' in the model");
  }
  try {
    place_plugins(m.graph, {rms_norm_replacing({"/nothing/*"})}, nullptr);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "plugin placement 'fusebench.plugin.RMSNorm' ('rms'): field 'replace': no node matches");
  }
  // The embeddings' LayerNorm output and the residual Add that reads it directly, with the
  // whole attention block (not matched) between them as well: one plugin would be a cycle.
  PluginPlacement around;
  around.op = "fusebench.plugin.Copy";
  around.replace_nodes = {"/embeddings/LayerNorm/Add_1", "/encoder/layer.0/attention/output/Add"};
  around.replace_ops = {};
  try {
    place_plugins(m.graph, {around}, nullptr);
    FAIL() << "a placement around unmatched nodes was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("plugin placement 'fusebench.plugin.Copy': the matched nodes cannot become one node "
                                         "(a node between them is not matched)"),
              std::string::npos)
        << e.what();
  }
}

TEST(Plugins, UnknownPluginOpIsAnErrorNamingNodeAndOp) {
  LoadedModel m = load_model(kBert);
  PluginPlacement p = copy_after(kSoftmax0);
  p.op = "fusebench.plugin.NoSuchOp";
  Graph g = place_plugins(m.graph, {p}, nullptr);
  BuildConfig cfg;
  try {
    build_engine(g, cfg, {registry_with_plugins({})});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'copy' (NoSuchOp)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fusebench.plugin.NoSuchOp"), std::string::npos) << e.what();
  }
}

TEST(Plugins, BadAttributesFailNamingThePlugin) {
  LoadedModel m = load_model(kLlama);
  PluginPlacement p = rms_norm_replacing({"/norm/*"});
  p.attrs["epsilon"] = Attribute{-1.0f};
  Graph g = place_plugins(m.graph, {p}, nullptr);
  BuildConfig cfg;
  try {
    build_engine(g, cfg, {registry_with_plugins({})});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("plugin 'fusebench.plugin.RMSNorm' (built in) refused the node's attributes: "
                                         "RMSNorm: epsilon must be >= 0"),
              std::string::npos)
        << e.what();
  }
}

TEST(Plugins, MissingLibraryIsAClearError) {
  try {
    registry_with_plugins({"/nonexistent/libnothing.so"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "plugin library '/nonexistent/libnothing.so': no such file");
  }
}

LayerInfo layer(std::string name, std::string kind, std::vector<std::string> sources, std::string kernel = "k") {
  LayerInfo l;
  l.name = std::move(name);
  l.kind = std::move(kind);
  l.kernel = std::move(kernel);
  l.sources = std::move(sources);
  return l;
}

TEST(PluginCost, SplitsByProvenance) {
  // Without: A (fused from a, b, c) 1.0 ms; D 0.5 ms.
  // With: a 0.4, plugin p 0.1, b+c fused 0.9, D 0.6.
  std::vector<LayerInfo> without{layer("A", "fusebench.Attention", {"a", "b", "c"}), layer("D", "MatMul", {"d"})};
  std::vector<LayerInfo> with{layer("a", "MatMul", {"a"}), layer("p", "fusebench.plugin.Copy", {"p"}, "plugin x"),
                              layer("bc", "fusebench.Fused", {"b", "c"}), layer("D", "MatMul", {"d"})};
  PluginCost c = split_plugin_cost(with, {0.4, 0.1, 0.9, 0.6}, {false, true, false, false}, without, {1.0, 0.5});
  EXPECT_DOUBLE_EQ(c.plugin_ms, 0.1);
  ASSERT_EQ(c.prevented.size(), 1u);
  EXPECT_EQ(c.prevented[0].name, "fusebench.Attention 'A' (3 nodes)");
  EXPECT_DOUBLE_EQ(c.prevented[0].before_ms, 1.0);
  EXPECT_DOUBLE_EQ(c.prevented[0].after_ms, 1.3);
  ASSERT_EQ(c.prevented[0].after.size(), 2u);
  EXPECT_NEAR(c.fusion_ms, 0.3, 1e-12);
  EXPECT_NEAR(c.rest_ms, 0.1, 1e-12);
}

// In a GPU build a plugin runs on the CPU ("cpu:plugin …") between two copies that device
// placement credits to its node: the copies are the plugin's own cost; another copy is not.
TEST(PluginCost, OnAGpuThePluginsCopiesAreItsOwn) {
  std::vector<LayerInfo> with{layer("a", "MatMul", {"a"}),
                              layer("to_host", "fusebench.CopyToHost", {"p"}, "copy.device_to_host"),
                              layer("p", "fusebench.plugin.Copy", {"p"}, "cpu:plugin x"),
                              layer("to_device", "fusebench.CopyToDevice", {"p"}, "copy.host_to_device"),
                              layer("other", "fusebench.CopyToHost", {"nms"}, "copy.device_to_host"),
                              layer("nms", "NonMaxSuppression", {"nms"}, "cpu:fusebench.NonMaxSuppression")};
  EXPECT_EQ(plugin_owned_layers(with), (std::vector<bool>{false, true, true, true, false, false}));
  EXPECT_TRUE(is_plugin_layer(with[2]));
  EXPECT_FALSE(is_plugin_layer(with[5]));
}

TEST(PluginCost, ReplacedLayersCountAgainstThePlugin) {
  // The plugin stands for n1..n3 (three baseline layers, 0.9 ms) and takes 0.2 ms.
  std::vector<LayerInfo> without{layer("n1", "Pow", {"n1"}), layer("n2", "ReduceMean", {"n2"}), layer("n3", "Mul", {"n3"})};
  std::vector<LayerInfo> with{layer("rms", "fusebench.plugin.RMSNorm", {"n1", "n2", "n3"}, "plugin y")};
  PluginCost c = split_plugin_cost(with, {0.2}, {true}, without, {0.3, 0.3, 0.3});
  EXPECT_DOUBLE_EQ(c.plugin_ms, 0.2);
  ASSERT_EQ(c.prevented.size(), 1u);
  EXPECT_TRUE(c.prevented[0].after.empty());
  EXPECT_NEAR(c.fusion_ms, -0.9, 1e-12);
  EXPECT_DOUBLE_EQ(c.rest_ms, 0.0);
}

TEST(PluginCost, StoredAndReadBack) {
  const std::string path = (std::filesystem::temp_directory_path() / ("fb_plugin_cost_" + std::to_string(::getpid()) + ".db")).string();
  std::filesystem::remove(path);
  std::vector<LayerInfo> without{layer("A", "fusebench.Attention", {"a", "b", "c"}), layer("D", "MatMul", {"d"})};
  std::vector<LayerInfo> with{layer("a", "MatMul", {"a"}), layer("p", "fusebench.plugin.Copy", {"p"}, "plugin x"),
                              layer("bc", "fusebench.Fused", {"b", "c"}), layer("D", "MatMul", {"d"})};
  CaseResult r;
  r.spec.model = "zoo:x";
  r.plugin_cost = split_plugin_cost(with, {0.4, 0.1, 0.9, 0.6}, {false, true, false, false}, without, {1.0, 0.5});
  r.plugin_cost->with_ms = 2.0;
  r.plugin_cost->difference_ms = 0.5;
  r.plugin_cost->difference_ci_low = 0.45;
  r.plugin_cost->within_interval = true;
  r.plugin_cost->stop_reason = "converged";
  {
    ResultStore store(path);
    const int64_t run = store.begin_run(RunInfo{});
    store.write_case(run, r);
    const std::vector<StoredCase> cases = store.load_cases(run);
    ASSERT_EQ(cases.size(), 1u);
    ASSERT_TRUE(cases[0].result.plugin_cost.has_value());
    const PluginCost& c = *cases[0].result.plugin_cost;
    EXPECT_EQ(c.with_ms, 2.0);
    EXPECT_EQ(c.difference_ms, 0.5);
    EXPECT_EQ(c.difference_ci_low, 0.45);
    EXPECT_TRUE(c.within_interval);
    EXPECT_EQ(c.stop_reason, "converged");
    EXPECT_DOUBLE_EQ(c.plugin_ms, 0.1);
    ASSERT_EQ(c.plugin_layers.size(), 1u);
    EXPECT_EQ(c.plugin_layers[0].kind, "fusebench.plugin.Copy");
    ASSERT_EQ(c.prevented.size(), 1u);
    EXPECT_EQ(c.prevented[0].name, "fusebench.Attention 'A' (3 nodes)");
    EXPECT_DOUBLE_EQ(c.prevented[0].after_ms, 1.3);
    ASSERT_EQ(c.prevented[0].after.size(), 2u);
    EXPECT_EQ(c.prevented[0].after[1].name, "bc");
    EXPECT_NEAR(c.rest_ms, 0.1, 1e-12);
  }
  std::filesystem::remove(path);
}

TEST(PluginSettings, RoundTripAndCaseKey) {
  CaseSpec a;
  a.model_hash = "abc";
  const std::string plain_key = a.case_key();
  a.plugins.libraries = {"/x/libexample.so"};
  a.plugins.placements = {copy_after(kSoftmax0, 0)};
  CaseSpec b = CaseSpec::from_json(a.to_json());
  EXPECT_EQ(b.plugins.libraries, a.plugins.libraries);
  ASSERT_EQ(b.plugins.placements.size(), 1u);
  EXPECT_EQ(b.plugins.placements[0].after, kSoftmax0);
  EXPECT_EQ(std::get<int64_t>(b.plugins.placements[0].attrs.at("bytes").value), 0);
  EXPECT_EQ(b.case_key(), a.case_key());
  EXPECT_NE(a.case_key(), plain_key);
  EXPECT_EQ(a.label(), " b=1 fp32 standard t=1 +copy");
  CaseSpec moved = a;
  moved.plugins.libraries = {"/elsewhere/libexample.so"};  // the file name keys it, not the path
  EXPECT_EQ(moved.case_key(), a.case_key());
  moved.plugins.placements[0].after = "other";
  EXPECT_NE(moved.case_key(), a.case_key());
}

}  // namespace
}  // namespace fb
