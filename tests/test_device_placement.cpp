// Device placement: in a build for a device, a node the device's backend has no kernel
// for runs on the CPU with copy layers between the two memories. Checked without a GPU on
// a stand-in device whose "device memory" is host memory and whose layers are the CPU's:
// the same engine code paths (device arena, host arena, copies, per-layer device timers)
// as on CUDA, with outputs that must equal the CPU engine's to float rounding (the same
// kernels; on many cores their threads may split a reduction differently between runs).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>

#include "engine/backend/backend.h"
#include "engine/builder/builder.h"
#include "engine/plan/graph_proto.h"
#include "engine/reference/reference_executor.h"
#include "harness/cases/inputs.h"
#include "harness/cases/model_source.h"

namespace fb {
namespace {

std::shared_ptr<std::byte> device_bytes(size_t bytes) {
  void* p = std::aligned_alloc(64, std::max<size_t>(64, (bytes + 63) / 64 * 64));
  if (!p) throw Error("out of memory");
  return std::shared_ptr<std::byte>(static_cast<std::byte*>(p), std::free);
}

// A CPU layer over host-tagged views of the stand-in device's tensors (its memory is the host's).
class HostViewLayer final : public Layer {
 public:
  HostViewLayer(const LayerRequest& r, const Backend& cpu) {
    std::vector<const Tensor*> ins;
    std::vector<Tensor*> outs;
    for (const Tensor* t : r.inputs) ins.push_back(t ? &views_.emplace_back(host_view(*t)) : nullptr);
    for (Tensor* t : r.outputs) outs.push_back(t ? &views_.emplace_back(host_view(*t)) : nullptr);
    layer_ = cpu.make_layer(LayerRequest{r.node, r.def, r.ops, ins, outs, r.constant_inputs, r.host_constants, r.winograd});
  }
  void run() override { layer_->run(); }
  std::string kernel() const override { return "device." + layer_->kernel(); }
  Tensor plain_copy(const Tensor& output) const override { return host_view(output).clone(); }

 private:
  static Tensor host_view(const Tensor& t) { return Tensor::view(t.dtype(), t.shape(), const_cast<void*>(t.raw())); }
  std::deque<Tensor> views_;  // stable addresses
  std::unique_ptr<Layer> layer_;
};

class HostClockTimer final : public DeviceTimer {
 public:
  void start() override { t0_ = std::chrono::steady_clock::now(); }
  void stop() override { t1_ = std::chrono::steady_clock::now(); }
  double elapsed_ms() override { return std::chrono::duration<double, std::milli>(t1_ - t0_).count(); }

 private:
  std::chrono::steady_clock::time_point t0_, t1_;
};

// A device with every CPU kernel but those of `missing` ops.
class StandInDevice final : public Backend {
 public:
  explicit StandInDevice(std::set<std::string> missing) : missing_(std::move(missing)) {}
  std::string name() const override { return "stand-in"; }
  Device device() const override { return Device::Cuda; }
  PrecisionSet supported_precisions(const Node& node, const OpDef& def) const override {
    return missing_.count(node.op_type) || def.plugin ? PrecisionSet{} : cpu_->supported_precisions(node, def);
  }
  std::unique_ptr<Layer> make_layer(const LayerRequest& r) const override {
    EXPECT_FALSE(missing_.count(r.node.op_type)) << r.node.describe() << " reached the device";
    return std::make_unique<HostViewLayer>(r, *cpu_);
  }
  DeviceBuffer allocate(size_t bytes) const override {
    void* p = std::aligned_alloc(64, std::max<size_t>(64, (bytes + 63) / 64 * 64));
    return DeviceBuffer(p, bytes, Device::Cuda, std::free);
  }
  Tensor upload(const Tensor& host) const override {
    std::shared_ptr<std::byte> b = device_bytes(host.nbytes());
    std::memcpy(b.get(), host.raw(), host.nbytes());
    return Tensor::adopt(host.dtype(), host.shape(), b, Device::Cuda);
  }
  void synchronize() const override {}
  void copy_to_device(void* dst, const void* src, size_t n) const override { std::memcpy(dst, src, n); }
  void copy_to_host(void* dst, const void* src, size_t n) const override { std::memcpy(dst, src, n); }
  Tensor to_host(const Tensor& t) const override {
    return Tensor::view(t.dtype(), t.shape(), const_cast<void*>(t.raw())).clone();
  }
  bool runs_channels_last(const Node&, Precision) const override { return false; }
  std::unique_ptr<DeviceTimer> make_timer() const override { return std::make_unique<HostClockTimer>(); }

 private:
  std::set<std::string> missing_;
  std::shared_ptr<const Backend> cpu_ = backend_named("cpu");
};

struct Built {
  std::unique_ptr<Engine> engine;
  std::vector<Tensor> inputs;
};

Built build_on(const std::string& model, FusionLevel fusion, std::shared_ptr<const Backend> backend,
               PrecisionMode mode = PrecisionMode::Prefer) {
  const LoadedModel m = load_model(model);
  BuildConfig cfg;
  cfg.fusion = fusion;
  cfg.precision_mode = mode;
  Built b;
  b.engine = build_engine(m.graph, cfg, {OpRegistry::builtin(), std::move(backend)});
  b.inputs = make_inputs(m.graph, ReferenceExecutor(m.graph, 1).input_shapes(), 7);
  return b;
}

// Equal bytes, or for float32 within 1e-5 relative.
void expect_same_tensor(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.nbytes(), b.nbytes()) << what;
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  if (a.dtype() != DType::Float32) {
    EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << what;
    return;
  }
  int64_t off = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    off += std::fabs(a.data<float>()[i] - b.data<float>()[i]) > 1e-5f * std::max(1.f, std::fabs(b.data<float>()[i]));
  EXPECT_EQ(off, 0) << what << ": elements beyond 1e-5 of the CPU engine's";
}

void expect_same_outputs(Engine& device, Engine& cpu, const std::vector<Tensor>& inputs) {
  device.run(inputs);
  cpu.run(inputs);
  const std::vector<Tensor> a = device.outputs(), b = cpu.outputs();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    expect_same_tensor(a[i], b[i], "output " + std::to_string(i));
  }
}

int count_kernel(const Engine& e, const std::string& prefix) {
  int n = 0;
  for (const LayerInfo& l : e.layers()) n += l.kernel.rfind(prefix, 0) == 0;
  return n;
}

// Each Relu of the MLP runs on the CPU between a copy to the host and a copy back; the
// outputs are the CPU engine's, and a profiled run times the copies like any layer.
TEST(DevicePlacement, AnOpTheDeviceLacksRunsOnTheCpuBetweenCopies) {
  auto device = std::make_shared<StandInDevice>(std::set<std::string>{"Relu"});
  Built on_device = build_on("zoo:mlp", FusionLevel::None, device);
  Built on_cpu = build_on("zoo:mlp", FusionLevel::None, backend_named("cpu"));
  int relus = 0;
  for (const Node& n : on_cpu.engine->graph().nodes) relus += n.op_type == "Relu";
  ASSERT_GT(relus, 0);
  EXPECT_EQ(count_kernel(*on_device.engine, "cpu:"), relus);
  EXPECT_EQ(count_kernel(*on_device.engine, "copy.device_to_host"), relus);
  EXPECT_EQ(count_kernel(*on_device.engine, "copy.host_to_device"), relus);
  EXPECT_GT(on_device.engine->host_arena_bytes(), 0u);
  for (const LayerInfo& l : on_device.engine->layers())
    if (l.kind == "fusebench.CopyToHost" || l.kind == "fusebench.CopyToDevice") {
      ASSERT_EQ(l.sources.size(), 1u) << l.name;  // credited to the Relu it serves
      EXPECT_NE(l.sources[0].find("Relu"), std::string::npos) << l.sources[0];
      EXPECT_EQ(l.precision, fb::Precision::FP32);
    }
  const std::vector<std::string>& log = on_device.engine->build_log();
  EXPECT_TRUE(std::any_of(log.begin(), log.end(), [&](const std::string& line) {
    return line == "device placement: " + std::to_string(relus) + " node(s) on the CPU, which the stand-in backend has "
                   "no kernel for (Relu x" + std::to_string(relus) + "), " + std::to_string(2 * relus) +
                   " copy layer(s) between the two memories";
  })) << "the build log says where and why";
  expect_same_outputs(*on_device.engine, *on_cpu.engine, on_device.inputs);
  std::vector<double> layer_ms;
  on_device.engine->run(on_device.inputs, &layer_ms);
  ASSERT_EQ(layer_ms.size(), on_device.engine->layers().size());
  for (size_t i = 0; i < layer_ms.size(); ++i)
    if (on_device.engine->layers()[i].kernel.rfind("copy.", 0) == 0) {
      EXPECT_GE(layer_ms[i], 0.0);
    }
}

// A CUDA graph records device work only: a plan with a layer on the CPU is refused naming
// the node, and so is a CPU build asking for one.
TEST(DevicePlacement, ACudaGraphIsRefusedWhereALayerRunsOnTheHost) {
  const LoadedModel m = load_model("zoo:mlp");
  BuildConfig cfg;
  cfg.fusion = FusionLevel::None;
  cfg.cuda_graph = true;
  auto device = std::make_shared<StandInDevice>(std::set<std::string>{"Relu"});
  auto error_of = [&](std::shared_ptr<const Backend> backend) {
    try {
      build_engine(m.graph, cfg, {OpRegistry::builtin(), std::move(backend)});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("built");
  };
  const std::string fallback = error_of(device);
  EXPECT_NE(fallback.find("cuda_graph: node '"), std::string::npos) << fallback;
  EXPECT_NE(fallback.find("(Relu) runs on the CPU, which a CUDA graph cannot record"), std::string::npos) << fallback;
  EXPECT_EQ(error_of(backend_named("cpu")),
            "cuda_graph: device 'cpu' records no graphs (only a GPU's engine does); build with \"cuda_graph\": false");
}

// The MLP's Gemm head on the CPU: the graph's output is written in host memory and read from there.
TEST(DevicePlacement, AGraphOutputWrittenOnTheHostIsReadFromThere) {
  auto device = std::make_shared<StandInDevice>(std::set<std::string>{"Gemm"});
  Built on_device = build_on("zoo:mlp", FusionLevel::None, device);
  Built on_cpu = build_on("zoo:mlp", FusionLevel::None, backend_named("cpu"));
  EXPECT_EQ(count_kernel(*on_device.engine, "copy.host_to_device"), 0);
  EXPECT_EQ(count_kernel(*on_device.engine, "copy.device_to_host"), 1);
  expect_same_outputs(*on_device.engine, *on_cpu.engine, on_device.inputs);
}

// A view (Flatten) of a value already on the host stays there; the Gemm after it gets the
// one copy back. Under mark-all every tensor is kept and comes back whichever memory holds it.
TEST(DevicePlacement, AViewOfAHostValueStaysOnTheHostAndMarkAllKeepsEveryTensor) {
  const std::string model = "zoo:resnet?blocks=1&width=8&image=16";
  auto device = std::make_shared<StandInDevice>(std::set<std::string>{"GlobalAveragePool"});
  Built on_device = build_on(model, FusionLevel::Standard, device);
  Built on_cpu = build_on(model, FusionLevel::Standard, backend_named("cpu"));
  int host_views = 0;
  for (const Node& n : on_device.engine->graph().nodes) host_views += n.on_host && n.op_type == "Flatten";
  EXPECT_EQ(host_views, 1);
  EXPECT_EQ(count_kernel(*on_device.engine, "copy.device_to_host"), 1);
  EXPECT_EQ(count_kernel(*on_device.engine, "copy.host_to_device"), 1);
  expect_same_outputs(*on_device.engine, *on_cpu.engine, on_device.inputs);

  Built all = build_on(model, FusionLevel::MarkAll, device);
  Built all_cpu = build_on(model, FusionLevel::MarkAll, backend_named("cpu"));
  all.engine->run(all.inputs);
  all_cpu.engine->run(all.inputs);
  const auto kept = all.engine->kept_values(), kept_cpu = all_cpu.engine->kept_values();
  std::map<std::string, const Tensor*> by_name;
  for (const auto& [name, t] : kept) by_name[name] = &t;
  for (const auto& [name, t] : kept_cpu) {
    ASSERT_TRUE(by_name.count(name)) << name;
    expect_same_tensor(*by_name[name], t, name);
  }
}

TEST(DevicePlacement, ObeyRefusesTheBuildNamingTheNodeAndOp) {
  auto device = std::make_shared<StandInDevice>(std::set<std::string>{"Relu"});
  try {
    build_on("zoo:mlp", FusionLevel::None, device, PrecisionMode::Obey);
    FAIL() << "built";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("(Relu): the stand-in backend has no kernel for Relu, and precision mode obey"), std::string::npos)
        << what;
  }
}

TEST(DevicePlacement, APlanKeepsWhereEachNodeRuns) {
  auto device = std::make_shared<StandInDevice>(std::set<std::string>{"Relu"});
  Built b = build_on("zoo:mlp", FusionLevel::None, device);
  const Graph back = graph_from_proto(graph_to_proto(b.engine->graph()), "test");
  ASSERT_EQ(back.nodes.size(), b.engine->graph().nodes.size());
  int on_host = 0;
  for (size_t i = 0; i < back.nodes.size(); ++i) {
    EXPECT_EQ(back.nodes[i].on_host, b.engine->graph().nodes[i].on_host) << back.nodes[i].describe();
    on_host += back.nodes[i].on_host;
  }
  EXPECT_GT(on_host, 0);
}

// The CPU build places nothing: no pass runs, no copies, no host arena.
TEST(DevicePlacement, ACpuBuildHasNoCopies) {
  Built b = build_on("zoo:mlp", FusionLevel::None, backend_named("cpu"));
  EXPECT_EQ(count_kernel(*b.engine, "copy."), 0);
  EXPECT_EQ(b.engine->host_arena_bytes(), 0u);
  for (const Node& n : b.engine->graph().nodes) EXPECT_FALSE(n.on_host);
}

}  // namespace
}  // namespace fb
