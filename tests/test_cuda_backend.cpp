// The CUDA backend (engine/backend/cuda/). Without a GPU: device strings are checked, and
// asking for one is an Error saying what was found, never a crash. With one: every zoo
// model on both GPU executors (the eager device reference and the engine at fp32, fp16
// and bf16) against the CPU reference: fp32 elementwise within the case defaults, 16-bit
// by cosine >= 0.999 (the bar). These tests skip, saying why, where no GPU is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

#include "engine/backend/backend.h"
#include "engine/builder/builder.h"
#include "engine/ops/half_float.h"
#include "engine/reference/device_reference.h"
#include "engine/reference/reference_executor.h"
#include "harness/cases/accuracy.h"
#include "harness/cases/inputs.h"
#include "harness/cases/model_source.h"
#include "tests/resnet_block_model.h"

namespace fb {
namespace {

// "" when a CUDA device can be used here, else why not (the backend's own words).
std::string why_no_gpu() {
  try {
    backend_named("cuda");
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

TEST(CudaDevice, UnknownDeviceStringsAreRefusedByName) {
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "CUDA"}) {
    try {
      backend_named(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("cpu, cuda, cuda:N"), std::string::npos) << e.what();
    }
  }
}

TEST(CudaDevice, MissingGpuIsAnErrorNamingTheDevice) {
  const std::string why = why_no_gpu();
  if (why.empty()) GTEST_SKIP() << "a CUDA device is usable here: nothing is missing";
  // No driver, no device, or a build without the backend: each message names the device.
  EXPECT_TRUE(why.find("cuda:0") != std::string::npos || why.find("device 'cuda'") != std::string::npos) << why;
  // A device index past the last one says so too (when the build has the backend).
  try {
    backend_named("cuda:7");
    ADD_FAILURE() << "cuda:7 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cuda:7"), std::string::npos) << e.what();
  }
}

TEST(CudaDevice, ACaseOnAMissingGpuFailsBeforeBuilding) {
  if (why_no_gpu().empty()) GTEST_SKIP() << "a CUDA device is usable here";
  const LoadedModel m = load_model("zoo:mlp");
  BuildConfig cfg;
  cfg.device = "cuda";
  EXPECT_THROW(build_engine(m.graph, cfg), Error);
}

struct Executors {
  std::vector<Tensor> cpu_reference, device_reference, engine_fp32, engine_fp16, engine_bf16;
  std::string engine_kernels;  // the fp32 engine's layers: kind [kernel], for failure messages
};

std::vector<Tensor> run_engine(const Graph& g, const BuildConfig& cfg, const std::vector<Tensor>& inputs,
                               std::string* kernels = nullptr) {
  std::unique_ptr<Engine> e = build_engine(g, cfg);
  e->run(inputs);
  if (kernels)
    for (const LayerInfo& l : e->layers()) *kernels += l.kind + " [" + l.kernel + "]\n";
  std::vector<Tensor> out;
  for (const Tensor& t : e->outputs()) out.push_back(t.clone());
  return out;
}

class CudaZoo : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaZoo, BothExecutorsAgreeWithTheCpuReference) {
  if (const std::string why = why_no_gpu(); !why.empty()) GTEST_SKIP() << "no usable GPU: " << why;
  const LoadedModel m = load_model(std::string("zoo:") + GetParam());
  const int64_t batch = 2;
  ReferenceExecutor reference(m.graph, batch);
  const std::vector<Tensor> inputs = make_inputs(m.graph, reference.input_shapes(), 1234);
  const std::vector<Tensor> expected = reference.run(inputs);
  BuildConfig cfg;
  cfg.device = "cuda";
  cfg.batch = batch;
  cfg.fusion = FusionLevel::Aggressive;

  std::unique_ptr<Engine> device_reference = build_device_reference(m.graph, cfg, OpRegistry::builtin());
  device_reference->run(inputs);
  const AccuracyResult ref = compare_outputs(device_reference->outputs(), expected, m.graph.outputs, default_accuracy(fb::Precision::FP32));
  EXPECT_TRUE(ref.passed) << "device reference: " << ref.detail;

  std::string kernels;
  const AccuracyResult fp32 =
      compare_outputs(run_engine(m.graph, cfg, inputs, &kernels), expected, m.graph.outputs, default_accuracy(fb::Precision::FP32));
  EXPECT_TRUE(fp32.passed) << "engine fp32: " << fp32.detail << "\nlayers:\n" << kernels;

  AccuracyConfig by_cosine;
  by_cosine.elementwise = false;
  by_cosine.min_cosine = 0.999;
  for (const char* p : {"tf32", "fp16", "bf16"}) {
    cfg.precision = fb::parse_precision(p);
    const AccuracyResult half = compare_outputs(run_engine(m.graph, cfg, inputs), expected, m.graph.outputs, by_cosine);
    EXPECT_TRUE(half.passed) << "engine " << p << ": cosine " << half.cosine << " " << half.detail;
  }
}

// y = 3x, an op only the CPU has (as a plugin's or an ONNX op the GPU backend lacks).
void compute_triple(OpContext& c) {
  const Tensor& x = c.in(0);
  for (int64_t i = 0; i < x.numel(); ++i) c.out(0).data<float>()[i] = 3.f * x.data<float>()[i];
}

// x → MatMul → op → MatMul → y, with h (the first product) and t (op's output) graph
// outputs too: h is kept, so a plugin that may write over its input cannot here.
Graph matmul_sandwich(const char* op, const char* domain) {
  Graph g;
  g.name = "sandwich";
  g.opset = 17;
  g.inputs.push_back(GraphInput{"x", DType::Float32, {4, 16}, {"", ""}});
  g.values["x"] = ValueInfo{DType::Float32, {4, 16}, true};
  for (const char* w : {"w1", "w2"}) {
    Tensor t = Tensor::empty(DType::Float32, {16, 16});
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = float((i * 7) % 13) / 13.f - 0.5f;
    g.initializers[w] = t;
    g.values[w] = ValueInfo{DType::Float32, {16, 16}, true};
  }
  auto node = [&](const char* name, const char* type, const char* dom, std::vector<std::string> in, std::string out) {
    Node n;
    n.name = name;
    n.op_type = type;
    n.domain = dom;
    n.inputs = std::move(in);
    n.outputs = {out};
    n.sources = {name};
    n.opset = 17;
    g.nodes.push_back(n);
  };
  node("mm1", "MatMul", "", {"x", "w1"}, "h");
  node("middle", op, domain, {"h"}, "t");
  node("mm2", "MatMul", "", {"t", "w2"}, "y");
  g.outputs = {"y", "t", "h"};
  return g;
}

// Builds `g` for the GPU, checks it against the CPU reference, and returns its layers' "kind [kernel]".
std::string built_and_checked(const Graph& g, std::shared_ptr<const OpRegistry> ops) {
  ReferenceExecutor reference(g, 4, {}, ops);
  const std::vector<Tensor> inputs = make_inputs(g, reference.input_shapes(), 5);
  const std::vector<Tensor> expected = reference.run(inputs);
  BuildConfig cfg;
  cfg.device = "cuda";
  cfg.batch = 4;
  cfg.fusion = FusionLevel::Aggressive;
  std::unique_ptr<Engine> e = build_engine(g, cfg, {ops});
  std::string kernels;
  for (const LayerInfo& l : e->layers()) kernels += l.kind + " [" + l.kernel + "]\n";
  e->run(inputs);
  const AccuracyResult r = compare_outputs(e->outputs(), expected, g.outputs, default_accuracy(fb::Precision::FP32));
  EXPECT_TRUE(r.passed) << r.detail << "\n" << kernels;
  std::vector<double> layer_ms;
  e->run(inputs, &layer_ms);
  for (size_t i = 0; i < layer_ms.size(); ++i)
    if (e->layers()[i].kernel.rfind("copy.", 0) == 0) {
      EXPECT_GT(layer_ms[i], 0.0) << e->layers()[i].name;
    }
  cfg.precision_mode = PrecisionMode::Obey;
  if (kernels.find("cpu:") != std::string::npos) {
    EXPECT_THROW(build_engine(g, cfg, {ops}), Error);
  }
  return kernels;
}

// An op only the CPU has (as an ONNX op the GPU backend lacks) runs on the CPU between a
// copy to the host and one back; its output t is read from host memory; the outputs agree
// with the CPU reference, and a profiled run times the copies.
TEST(CudaFallback, AnOpTheGpuLacksRunsOnTheCpuBetweenCopies) {
  if (const std::string why = why_no_gpu(); !why.empty()) GTEST_SKIP() << "no usable GPU: " << why;
  auto ops = std::make_shared<OpRegistry>(OpRegistry::with_builtin_ops());
  ops->add(OpDef{"example", "Triple", [](const ShapeContext& c) { return std::vector<ValueInfo>{c.in(0)}; }, compute_triple});
  ops->seal();
  const std::string kernels = built_and_checked(matmul_sandwich("Triple", "example"), ops);
  EXPECT_NE(kernels.find("example.Triple [cpu:"), std::string::npos) << kernels;
  EXPECT_NE(kernels.find("fusebench.CopyToHost [copy.device_to_host]"), std::string::npos) << kernels;
  EXPECT_NE(kernels.find("fusebench.CopyToDevice [copy.host_to_device]"), std::string::npos) << kernels;
}

// The shipped Copy plugin says it runs on the GPU: it is a layer there (one
// cudaMemcpyAsync on the engine's stream), with no copies to the CPU around it.
TEST(CudaPlugin, TheCopyPluginRunsOnTheGpuItself) {
  if (const std::string why = why_no_gpu(); !why.empty()) GTEST_SKIP() << "no usable GPU: " << why;
  const std::string kernels = built_and_checked(matmul_sandwich("Copy", "fusebench.plugin"), OpRegistry::builtin());
  EXPECT_NE(kernels.find("fusebench.plugin.Copy [plugin fusebench.plugin.Copy (built in)]"), std::string::npos) << kernels;
  EXPECT_EQ(kernels.find("copy."), std::string::npos) << kernels;
}

// A CUDA graph replays exactly what the layers run one by one: every zoo model's outputs,
// over several replays with new inputs in between, are the eager engine's to the bit. Both
// keep the libraries' heuristic algorithms: timed, a graph engine and an eager one may choose
// differently (CudaAlgorithms checks those against the CPU).
TEST_P(CudaZoo, ACudaGraphReplaysWhatTheLayersRun) {
  if (const std::string why = why_no_gpu(); !why.empty()) GTEST_SKIP() << "no usable GPU: " << why;
  const LoadedModel m = load_model(std::string("zoo:") + GetParam());
  BuildConfig cfg;
  cfg.device = "cuda";
  cfg.batch = 2;
  cfg.fusion = FusionLevel::Aggressive;
  cfg.time_algorithms = false;
  std::unique_ptr<Engine> eager = build_engine(m.graph, cfg);
  cfg.cuda_graph = true;
  std::unique_ptr<Engine> graphed = build_engine(m.graph, cfg);
  const std::vector<std::string>& log = graphed->build_log();
  EXPECT_TRUE(std::any_of(log.begin(), log.end(), [](const std::string& l) { return l.rfind("CUDA graph:", 0) == 0; }));
  ReferenceExecutor reference(m.graph, cfg.batch);
  for (uint64_t seed : {1u, 2u, 3u}) {  // the first run records; the later ones replay
    const std::vector<Tensor> inputs = make_inputs(m.graph, reference.input_shapes(), seed);
    eager->run(inputs);
    graphed->run(inputs);
    const std::vector<Tensor> want = eager->outputs();
    const std::vector<Tensor> got = graphed->outputs();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(std::memcmp(got[i].raw(), want[i].raw(), want[i].nbytes()), 0) << m.graph.outputs[i] << " seed " << seed;
  }
}

// Execution contexts on streams of their own (Engine::make_context), driven at once from
// three threads with different inputs, each give the outputs the engine gives those inputs
// alone: eager and replayed as CUDA graphs.
TEST_P(CudaZoo, ContextsOnTheirOwnStreamsRunConcurrently) {
  if (const std::string why = why_no_gpu(); !why.empty()) GTEST_SKIP() << "no usable GPU: " << why;
  const LoadedModel m = load_model(std::string("zoo:") + GetParam());
  ReferenceExecutor reference(m.graph, 2);
  for (bool graphs : {false, true}) {
    BuildConfig cfg;
    cfg.device = "cuda";
    cfg.batch = 2;
    cfg.fusion = FusionLevel::Aggressive;
    cfg.cuda_graph = graphs;
    std::unique_ptr<Engine> engine = build_engine(m.graph, cfg);
    std::vector<std::unique_ptr<Engine>> contexts;
    contexts.push_back(engine->make_context());
    contexts.push_back(engine->make_context());
    std::vector<Engine*> all{engine.get(), contexts[0].get(), contexts[1].get()};
    std::vector<std::vector<Tensor>> inputs, want(all.size()), got(all.size());
    for (size_t i = 0; i < all.size(); ++i) {
      inputs.push_back(make_inputs(m.graph, reference.input_shapes(), 10 + i));
      engine->run(inputs[i]);
      for (const Tensor& t : engine->outputs()) want[i].push_back(t.clone());
    }
    std::vector<std::thread> threads;
    std::vector<std::string> errors(all.size());
    for (size_t i = 0; i < all.size(); ++i)
      threads.emplace_back([&, i] {
        try {
          for (int k = 0; k < 5; ++k) all[i]->run(inputs[i]);
          for (const Tensor& t : all[i]->outputs()) got[i].push_back(t.clone());
        } catch (const std::exception& e) {
          errors[i] = e.what();
        }
      });
    for (std::thread& t : threads) t.join();
    for (size_t i = 0; i < all.size(); ++i) {
      ASSERT_EQ(errors[i], "") << "context " << i << (graphs ? " (CUDA graph)" : "");
      ASSERT_EQ(got[i].size(), want[i].size());
      for (size_t o = 0; o < got[i].size(); ++o) {
        const float* a = got[i][o].data<float>();
        const float* b = want[i][o].data<float>();
        double worst = 0;
        for (int64_t j = 0; j < got[i][o].numel(); ++j) worst = std::max(worst, double(std::fabs(a[j] - b[j])) / (1e-3 + std::fabs(b[j])));
        EXPECT_LE(worst, 1e-4) << m.graph.outputs[o] << " of context " << i << (graphs ? " (CUDA graph)" : "");
      }
    }
  }
}

// A context reads the engine's weights where they already are: making one costs its own
// queue (stream, handles, workspace) and arena, not another copy of a 256 MB matrix.
TEST(CudaContexts, ShareTheEnginesWeights) {
  if (const std::string why = why_no_gpu(); !why.empty()) GTEST_SKIP() << "no usable GPU: " << why;
  Graph g;
  g.name = "big_weight";
  g.opset = 17;
  g.inputs.push_back(GraphInput{"x", DType::Float32, {1, 8192}, {"", ""}});
  g.values["x"] = ValueInfo{DType::Float32, {1, 8192}, true};
  Tensor w = Tensor::empty(DType::Float32, {8192, 8192});
  std::fill(w.data<float>(), w.data<float>() + w.numel(), 1e-4f);
  g.initializers["w"] = w;
  g.values["w"] = ValueInfo{DType::Float32, {8192, 8192}, true};
  Node n;
  n.name = "mm";
  n.op_type = "MatMul";
  n.inputs = {"x", "w"};
  n.outputs = {"y"};
  n.sources = {"mm"};
  n.opset = 17;
  g.nodes.push_back(n);
  g.values["y"] = ValueInfo{DType::Float32, {1, 8192}, true};
  g.outputs = {"y"};
  BuildConfig cfg;
  cfg.device = "cuda";
  std::unique_ptr<Engine> engine = build_engine(g, cfg);
  auto free_bytes = [&] { return int64_t(engine->kernels().backend->free_device_bytes().value()); };
  const int64_t before = free_bytes();
  std::unique_ptr<Engine> context = engine->make_context();
  const int64_t used = before - free_bytes();
  EXPECT_LT(used, int64_t(w.nbytes())) << "a context took " << used << " bytes";
  std::vector<Tensor> x{Tensor::empty(DType::Float32, {1, 8192})};
  std::fill(x[0].data<float>(), x[0].data<float>() + 8192, 1.f);
  context->run(x);
  EXPECT_NEAR(context->outputs()[0].data<float>()[0], 8192 * 1e-4f, 1e-3);
}

// A plan with a layer on the CPU cannot be one CUDA graph: refused naming the node.
TEST(CudaGraph, APlanWithACpuFallbackIsRefusedNamingTheNode) {
  if (const std::string why = why_no_gpu(); !why.empty()) GTEST_SKIP() << "no usable GPU: " << why;
  auto ops = std::make_shared<OpRegistry>(OpRegistry::with_builtin_ops());
  ops->add(OpDef{"example", "Triple", [](const ShapeContext& c) { return std::vector<ValueInfo>{c.in(0)}; }, compute_triple});
  ops->seal();
  BuildConfig cfg;
  cfg.device = "cuda";
  cfg.batch = 4;
  cfg.cuda_graph = true;
  try {
    build_engine(matmul_sandwich("Triple", "example"), cfg, {ops});
    ADD_FAILURE() << "built";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cuda_graph: node 'middle' (Triple) runs on the CPU"), std::string::npos) << e.what();
  }
}

// ---- Channels-last (NHWC) convolutions and the ops between them -------------------------

// Sets FUSEBENCH_CUDA_CHANNELS_LAST for a scope: the CUDA backend reads it each time the
// conv-layout pass asks, so an engine built inside is channels-last ("1") or plain ("0").
class ChannelsLastSetting {
 public:
  explicit ChannelsLastSetting(const char* value) {
    if (const char* v = std::getenv(kName)) before_ = v, had_ = true;
    setenv(kName, value, 1);
  }
  ~ChannelsLastSetting() { had_ ? setenv(kName, before_.c_str(), 1) : unsetenv(kName); }

 private:
  static constexpr const char* kName = "FUSEBENCH_CUDA_CHANNELS_LAST";
  std::string before_;
  bool had_ = false;
};

std::string layer_list(const Engine& e) {
  std::string s;
  for (const LayerInfo& l : e.layers()) s += l.name + ": " + l.kind + " [" + l.kernel + "]\n";
  return s;
}

// Layers whose kernel name holds every one of `parts`.
int layers_with(const Engine& e, const std::vector<const char*>& parts) {
  int n = 0;
  for (const LayerInfo& l : e.layers())
    n += std::all_of(parts.begin(), parts.end(), [&](const char* p) { return l.kernel.find(p) != std::string::npos; });
  return n;
}

Tensor as_float32(const Tensor& t) { return is_half_type(t.dtype()) ? widen_half(t) : t; }

// tests/resnet_block_model.h's block built for the GPU channels-last and plain, at tf32 and
// fp16 (a full-fp32 build stays plain): every convolution (cuDNN's and the depthwise one),
// both pools, the sum and the global pool run channels-last (their kernel names say nhwc),
// and the outputs and every layer's output (captured back in the plain layout) agree with
// the CPU reference and with the plain (NCHW) GPU engine by cosine >= 0.999.
TEST(CudaChannelsLast, AResNetBlockRunsChannelsLastAndAgreesWithCpuAndNchw) {
  if (const std::string why = why_no_gpu(); !why.empty()) GTEST_SKIP() << "no usable GPU: " << why;
  const Graph g = test::resnet_style_block();
  const int64_t batch = 2;
  ReferenceExecutor reference(g, batch);
  const std::vector<Tensor> inputs = make_inputs(g, reference.input_shapes(), 77);
  const std::vector<Tensor> expected = reference.run(inputs);
  const std::map<std::string, Tensor> every_value = reference.run_all(inputs);
  {
    // A full-fp32 build stays plain: cuDNN's NHWC kernels without tensor cores were slower.
    BuildConfig cfg;
    cfg.device = "cuda";
    cfg.batch = batch;
    cfg.fusion = FusionLevel::Standard;
    ChannelsLastSetting on("1");
    const std::unique_ptr<Engine> fp32 = build_engine(g, cfg);
    EXPECT_EQ(layers_with(*fp32, {"nhwc"}), 0) << "fp32 engine's layers:\n" << layer_list(*fp32);
  }
  for (const char* precision : {"tf32", "fp16"}) {
    SCOPED_TRACE(precision);
    BuildConfig cfg;
    cfg.device = "cuda";
    cfg.batch = batch;
    cfg.fusion = FusionLevel::Standard;
    cfg.precision = fb::parse_precision(precision);
    std::unique_ptr<Engine> nhwc, nchw;
    {
      ChannelsLastSetting on("1");
      nhwc = build_engine(g, cfg);
    }
    {
      ChannelsLastSetting off("0");
      nchw = build_engine(g, cfg);
    }
    const std::string layers = "channels-last engine's layers:\n" + layer_list(*nhwc);
    EXPECT_EQ(layers_with(*nhwc, {"cudnn.conv[", "nchw→nhwc"}), 1) << layers;  // the stem reads the image
    EXPECT_EQ(layers_with(*nhwc, {"cudnn.conv[", "nhwc→nhwc"}), 3) << layers;  // block.conv1, conv2 (+residual), pw
    EXPECT_EQ(layers_with(*nhwc, {"depthwise_conv", "nhwc→nhwc"}), 1) << layers;
    EXPECT_EQ(layers_with(*nhwc, {"cudnn.conv[", "nhwc→nchw"}), 1) << layers;  // head writes a graph output
    EXPECT_EQ(layers_with(*nhwc, {"cuda.maxpool nhwc→nhwc"}), 1) << layers;
    EXPECT_EQ(layers_with(*nhwc, {"cuda.averagepool nhwc→nhwc"}), 1) << layers;
    EXPECT_EQ(layers_with(*nhwc, {"cuda.binary[Add] nhwc→nhwc"}), 1) << layers;
    EXPECT_EQ(layers_with(*nhwc, {"cuda.global_pool[GlobalAveragePool] nhwc"}), 1) << layers;
    // cuDNN listed a channels-last algorithm for every convolution (none fell back to NCHW inside).
    EXPECT_EQ(layers_with(*nhwc, {"nchw inside"}), 0) << layers;
    EXPECT_EQ(layers_with(*nchw, {"nhwc"}), 0) << "FUSEBENCH_CUDA_CHANNELS_LAST=0 engine's layers:\n" << layer_list(*nchw);
    const std::vector<std::string>& log = nchw->build_log();
    EXPECT_TRUE(std::any_of(log.begin(), log.end(), [](const std::string& l) {
      return l.find("conv-layout: the cuda backend runs 5 FusedConv layer(s) plain (NCHW) only") != std::string::npos;
    }));

    const AccuracyConfig tol = default_accuracy(fb::parse_precision(precision));
    nhwc->run(inputs);
    nchw->run(inputs);
    const AccuracyResult vs_cpu = compare_outputs(nhwc->outputs(), expected, g.outputs, tol);
    EXPECT_TRUE(vs_cpu.passed) << "channels-last outputs against the CPU reference: " << vs_cpu.detail << "\n" << layers;
    const AccuracyResult vs_nchw = compare_outputs(nhwc->outputs(), nchw->outputs(), g.outputs, tol);
    EXPECT_TRUE(vs_nchw.passed) << "channels-last outputs against the NCHW GPU engine: " << vs_nchw.detail << "\n" << layers;

    // Layer by layer: the first value that differs names the layer at fault.
    const std::map<std::string, Tensor> got = nhwc->run_capture(inputs), plain = nchw->run_capture(inputs);
    int compared = 0;
    for (const auto& [name, t] : got) {
      if (!every_value.count(name) || !plain.count(name)) continue;
      const AccuracyResult r = compare_outputs({as_float32(t)}, {as_float32(plain.at(name))}, {name}, tol);
      EXPECT_TRUE(r.passed) << "value '" << name << "', channels-last against NCHW on the GPU: " << r.detail << "\n" << layers;
      const AccuracyResult c = compare_outputs({as_float32(t)}, {every_value.at(name)}, {name}, tol);
      EXPECT_TRUE(c.passed) << "value '" << name << "', channels-last against the CPU reference: " << c.detail;
      ++compared;
    }
    EXPECT_GE(compared, 10) << layers;  // every layer's output but the Flatten view
  }
}

// The engine times its library's algorithms at build (TensorRT's tactics) for each
// convolution (cuDNN) and matrix product (cuBLASLt), eager and in a CUDA graph, and its
// kernel names say so; the GPU reference keeps the heuristic's first (PyTorch with
// cudnn.benchmark off; for convolutions, the plan cuDNN's graph API lists first, as PyTorch's),
// and so does an engine built with time_algorithms off. All three
// agree with the CPU reference within the build precision's tolerance.
struct TimedLayers {
  const char* model;   // "zoo:..." or "resnet_style_block" (five convolutions)
  const char* kernel;  // the timed layers' kernel name starts so
};
class CudaAlgorithms : public ::testing::TestWithParam<TimedLayers> {};

TEST_P(CudaAlgorithms, TheEngineTimesThemAndTheReferenceDoesNot) {
  if (const std::string why = why_no_gpu(); !why.empty()) GTEST_SKIP() << "no usable GPU: " << why;
  const std::string model = GetParam().model;
  const char* kernel = GetParam().kernel;
  const Graph g = model == "resnet_style_block" ? test::resnet_style_block() : load_model(model).graph;
  const int64_t batch = 2;
  ReferenceExecutor cpu(g, batch);
  const std::vector<Tensor> inputs = make_inputs(g, cpu.input_shapes(), 5);
  const std::vector<Tensor> expected = cpu.run(inputs);
  for (const char* precision : {"fp32", "fp16"}) {
    SCOPED_TRACE(precision);
    BuildConfig cfg;
    cfg.device = "cuda";
    cfg.batch = batch;
    cfg.precision = fb::parse_precision(precision);
    const std::unique_ptr<Engine> timed = build_engine(g, cfg);  // by what eager calls cost, host included
    cfg.cuda_graph = true;
    const std::unique_ptr<Engine> timed_in_graph = build_engine(g, cfg);  // by each one's GPU time in a graph
    cfg.cuda_graph = false;
    cfg.time_algorithms = false;
    const std::unique_ptr<Engine> heuristic = build_engine(g, cfg);
    const int layers = layers_with(*heuristic, {kernel});
    if (model == "resnet_style_block") {
      EXPECT_EQ(layers, 5) << layer_list(*heuristic);
    }
    EXPECT_GT(layers, 0) << layer_list(*heuristic);
    EXPECT_EQ(layers_with(*timed, {kernel, ", timed]"}), layers) << layer_list(*timed);
    EXPECT_EQ(layers_with(*timed_in_graph, {kernel, ", timed]"}), layers) << layer_list(*timed_in_graph);
    EXPECT_EQ(layers_with(*heuristic, {", timed]"}), 0) << layer_list(*heuristic);
    if (model == "resnet_style_block") {
      EXPECT_EQ(layers_with(*heuristic, {"cudnn.conv[engine "}), layers) << layer_list(*heuristic);
    }
    const AccuracyConfig tol = default_accuracy(cfg.precision);
    for (Engine* e : {timed.get(), timed_in_graph.get(), heuristic.get()}) {
      e->run(inputs);
      const AccuracyResult r = compare_outputs(e->outputs(), expected, g.outputs, tol);
      EXPECT_TRUE(r.passed) << r.detail << "\n" << layer_list(*e);
    }
  }
  BuildConfig case_config;
  case_config.device = "cuda";
  case_config.batch = batch;
  const std::unique_ptr<Engine> reference = build_device_reference(g, case_config, OpRegistry::builtin());
  EXPECT_GT(layers_with(*reference, {kernel}), 0) << layer_list(*reference);
  EXPECT_EQ(layers_with(*reference, {", timed]"}), 0) << layer_list(*reference);
  if (model == "resnet_style_block") {  // untimed, PyTorch's way: a plan of cuDNN's graph API
    EXPECT_EQ(layers_with(*reference, {"cudnn.conv[engine "}), layers_with(*reference, {kernel})) << layer_list(*reference);
  }
}

INSTANTIATE_TEST_SUITE_P(Libraries, CudaAlgorithms,
                         ::testing::Values(TimedLayers{"resnet_style_block", "cudnn.conv["},
                                           TimedLayers{"zoo:bert", "cublasLt.matmul"}),
                         [](const ::testing::TestParamInfo<TimedLayers>& info) {
                           return std::string(info.param.kernel).substr(0, 5) == "cudnn" ? "CudnnConvolutions"
                                                                                          : "CublasLtProducts";
                         });

// The ops between convolutions that the zoo's CNNs have (ShuffleNet's Split, Concat and
// channel shuffle; EfficientNet's squeeze-and-excitation gate and pools; YOLO's Split,
// Concat, Add, nearest Resize and MaxPool; wav2vec2's GroupNorm between 1-D convolutions)
// run channels-last on the GPU wherever the CPU engine runs them so (the CUDA backend runs
// all of these), and the fp16 engine agrees with the NCHW GPU engine and the CPU reference.
TEST(CudaChannelsLast, ZooCnnsKeepTheOpsBetweenConvolutionsChannelsLast) {
  if (const std::string why = why_no_gpu(); !why.empty()) GTEST_SKIP() << "no usable GPU: " << why;
  struct Model {
    const char* spec;
    std::vector<std::pair<std::vector<const char*>, std::vector<const char*>>> kernels;  // the CPU's layer, the GPU's
  };
  const Model models[] = {
      {"zoo:shufflenet?classes=10&image=64&width=50",
       {{{"fusebench.split nhwc→nhwc"}, {"cuda.split nhwc→nhwc"}},
        {{"fusebench.concat nhwc→nhwc"}, {"cuda.concat nhwc→nhwc"}},
        {{"fusebench.channel_shuffle nhwc→nhwc"}, {"cuda.channel_shuffle nhwc→nhwc"}},
        {{"fusebench.global_avg_pool nhwc"}, {"cuda.global_pool[GlobalAveragePool] nhwc"}}}},
      {"zoo:efficientnet?classes=10&image=32&stages=3&width=50",
       {{{"fusebench.channel_gate nhwc→nhwc"}, {"cuda.binary[Mul] nhwc→nhwc"}},
        {{"fusebench.global_avg_pool nhwc"}, {"cuda.global_pool[GlobalAveragePool] nhwc"}}}},
      {"zoo:yolo?classes=7&image=64",
       {{{"fusebench.split nhwc→nhwc"}, {"cuda.split nhwc→nhwc"}},
        {{"fusebench.concat nhwc→nhwc"}, {"cuda.concat nhwc→nhwc"}},
        {{"fusebench.add nhwc→nhwc"}, {"cuda.binary[Add] nhwc→nhwc"}},
        {{"fusebench.resize nhwc→nhwc"}, {"cuda.resize_nearest nhwc→nhwc"}},
        {{"fusebench.max_pool nhwc→nhwc"}, {"cuda.maxpool nhwc→nhwc"}}}},
      {"zoo:wav2vec2", {{{"fusebench.group_norm", "channels-last"}, {"cuda.groupnorm", "nhwc→nhwc"}}}},
  };
  for (const Model& model : models) {
    SCOPED_TRACE(model.spec);
    const LoadedModel m = load_model(model.spec);
    BuildConfig cfg;
    cfg.batch = 2;
    cfg.fusion = FusionLevel::Aggressive;
    const std::unique_ptr<Engine> cpu = build_engine(m.graph, cfg);
    cfg.device = "cuda";
    cfg.precision = fb::Precision::FP16;
    std::unique_ptr<Engine> nhwc, nchw;
    {
      ChannelsLastSetting on("1");
      nhwc = build_engine(m.graph, cfg);
    }
    {
      ChannelsLastSetting off("0");
      nchw = build_engine(m.graph, cfg);
    }
    const std::string layers = "channels-last engine's layers:\n" + layer_list(*nhwc);
    for (const auto& [on_cpu, on_gpu] : model.kernels) {
      const int want = layers_with(*cpu, on_cpu);
      EXPECT_GT(want, 0) << on_cpu[0] << " on the CPU:\n" << layer_list(*cpu);
      EXPECT_EQ(layers_with(*nhwc, on_gpu), want) << on_gpu[0] << "\n" << layers;
    }
    ReferenceExecutor reference(m.graph, cfg.batch);
    const std::vector<Tensor> inputs = make_inputs(m.graph, reference.input_shapes(), 11);
    nhwc->run(inputs);
    nchw->run(inputs);
    const AccuracyResult vs_nchw = compare_outputs(nhwc->outputs(), nchw->outputs(), m.graph.outputs, default_accuracy(fb::Precision::FP16));
    EXPECT_TRUE(vs_nchw.passed) << "channels-last against NCHW on the GPU: cosine " << vs_nchw.cosine << " " << vs_nchw.detail;
    const AccuracyResult vs_cpu =
        compare_outputs(nhwc->outputs(), reference.run(inputs), m.graph.outputs, default_accuracy(fb::Precision::FP16));
    EXPECT_TRUE(vs_cpu.passed) << "channels-last against the CPU reference: cosine " << vs_cpu.cosine << " " << vs_cpu.detail;
  }
}

// fusebench.Attention alone: q, k, v [B, S, H·D] (and an additive mask) as graph inputs.
Graph attention_graph(int64_t batch, int64_t seq, int64_t heads, int64_t dim, const std::vector<int64_t>& mask) {
  Graph g;
  g.name = "attention";
  g.opset = 17;
  std::vector<std::string> in = {"q", "k", "v"};
  if (!mask.empty()) in.push_back("mask");
  for (const std::string& name : in) {
    const std::vector<int64_t> shape = name == "mask" ? mask : std::vector<int64_t>{batch, seq, heads * dim};
    g.inputs.push_back(GraphInput{name, DType::Float32, shape, std::vector<std::string>(shape.size())});
    g.values[name] = ValueInfo{DType::Float32, shape, true};
  }
  Node n;
  n.name = "attention";
  n.domain = "fusebench";
  n.op_type = "Attention";
  n.inputs = in;
  n.outputs = {"y"};
  n.sources = {"attention"};
  n.opset = 17;
  n.attrs["heads"] = Attribute{heads};
  n.attrs["scale"] = Attribute{float(1.0 / std::sqrt(double(dim)))};
  g.nodes.push_back(n);
  g.outputs = {"y"};
  return g;
}

// The fused (flash) attention kernel, at enough (batch, head, 64-query) blocks that the
// backend picks it: head dims 32 to 128, lengths that are and are not multiples of the
// 64-key tile, a padding mask [B, 1, 1, S] (the last keys of every other row out), a causal
// mask [1, 1, S, S]; against the CPU reference in fp32 by cosine >= 0.999 and elementwise
// within 16-bit rounding of values of order one; fp16 and bf16, and at a batch too small to
// fill the GPU, where the cuBLAS path runs the same attention, held to the same.
TEST(CudaFlashAttention, AgreesWithTheCpuAcrossHeadDimsLengthsAndMasks) {
  if (const std::string why = why_no_gpu(); !why.empty()) GTEST_SKIP() << "no usable GPU: " << why;
  // batch 48 fills an H200 (132 SMs) with blocks: the fused kernel runs; batch 2 does not.
  struct Case { int64_t batch, seq, heads, dim; const char* mask; const char* precision; };
  for (const Case c : {Case{48, 197, 4, 64, "padding", "fp16"}, Case{48, 128, 8, 32, "", "fp16"},
                       Case{48, 197, 2, 128, "causal", "fp16"}, Case{48, 100, 4, 48, "", "bf16"},
                       Case{48, 128, 4, 64, "padding", "bf16"}, Case{2, 128, 4, 64, "padding", "bf16"},
                       Case{2, 128, 4, 64, "padding", "fp16"}}) {
    const int64_t batch = c.batch;
    SCOPED_TRACE("batch " + std::to_string(batch) + ", " + std::to_string(c.seq) + " keys, " + std::to_string(c.heads) +
                 " heads of " + std::to_string(c.dim) + ", " + c.precision + (*c.mask ? std::string(", ") + c.mask + " mask" : ""));
    const std::string mask = c.mask;
    const std::vector<int64_t> mask_shape = mask == "padding" ? std::vector<int64_t>{batch, 1, 1, c.seq}
                                            : mask == "causal" ? std::vector<int64_t>{1, 1, c.seq, c.seq}
                                                               : std::vector<int64_t>{};
    const Graph g = attention_graph(batch, c.seq, c.heads, c.dim, mask_shape);
    ReferenceExecutor reference(g, batch);
    std::vector<Tensor> inputs = make_inputs(g, reference.input_shapes(), 11);
    if (!mask.empty()) {
      float* m = inputs[3].data<float>();
      for (int64_t i = 0; i < inputs[3].numel(); ++i) {
        const int64_t key = i % c.seq, row = i / c.seq;  // padding: row = batch; causal: row = query
        m[i] = mask == "padding" ? (row % 2 == 1 && key >= c.seq - 37 ? -10000.f : 0.f) : (key > row ? -10000.f : 0.f);
      }
    }
    const std::vector<Tensor> expected = reference.run(inputs);
    BuildConfig cfg;
    cfg.device = "cuda";
    cfg.batch = batch;
    cfg.fusion = FusionLevel::Aggressive;
    cfg.precision = fb::parse_precision(c.precision);
    const std::unique_ptr<Engine> e = build_engine(g, cfg);
    ASSERT_EQ(layers_with(*e, {batch == 48 ? "flash.attention[" : "cublas.attention["}), 1) << layer_list(*e);
    e->run(inputs);
    const AccuracyResult r = compare_outputs(e->outputs(), expected, g.outputs, default_accuracy(fb::parse_precision(c.precision), "cuda"));
    EXPECT_TRUE(r.passed) << "cosine " << r.cosine << " " << r.detail << "\n" << layer_list(*e);
    EXPECT_LT(r.max_abs_err, std::string(c.precision) == "bf16" ? 5e-2 : 1e-2) << "cosine " << r.cosine;
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, CudaZoo,
                         ::testing::Values("mlp", "bert", "resnet", "mobilenet", "vit", "llama", "gpt", "efficientnet",
                                           "shufflenet", "yolo", "wav2vec2"));

}  // namespace
}  // namespace fb
