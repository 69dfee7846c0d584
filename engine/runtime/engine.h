// A built engine: the optimized graph as a list of layers over one planned activation
// arena. Every activation has a fixed offset decided at build time (liveness-based
// reuse), reshapes are views, matrix primitives are prebuilt: run() allocates nothing,
// except in the eager region (the last layer, where a shape depends on data), which
// allocates its outputs as it runs.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/config/build_config.h"
#include "engine/ir/graph.h"
#include "engine/passes/fusion_event.h"

namespace fb {

struct LayerInfo {
  std::string name;
  std::string kind;     // op type, domain-qualified for fused ops ("fusebench.FusedMatMul")
  std::string kernel;   // what runs it ("onednn.matmul+bias+gelu", "view" for reshapes)
  Precision precision = Precision::FP32;  // what it ran in
  std::string precision_reason;   // default, constraint 'PATTERN', fallback from ...: why, view of its input, precision boundary
  std::vector<std::string> sources;  // source ONNX node names
  std::vector<Shape> input_shapes, output_shapes;
  double flops = 0;  // per run (0 where not counted)
  double bytes = 0;  // bytes read and written per run: inputs + outputs (0 for views)
  // Why the layer runs eagerly, allocating its outputs at run time ("" for a planned
  // layer): the eager region's reason (engine/builder/eager_region.h). Its output shapes
  // are then unknown until it runs (output_shapes empty).
  std::string eager{};
};

// What an engine's layers are made from: its op registry (sealed; a plugin's ops are
// added before sealing) and its backend. By default the shipped ops on the backend of the
// build's device (BuildConfig::device; nullptr here: that one).
struct EngineKernels {
  std::shared_ptr<const OpRegistry> ops = OpRegistry::builtin();
  std::shared_ptr<const Backend> backend = nullptr;
};

// A device backend's own clock for the last run: the copies in and the layers between
// events on its queue, and the host's time for the copies out (Engine::outputs).
struct DeviceTimes {
  double h2d_ms = 0, compute_ms = 0, d2h_ms = 0;
};

class Engine {
 public:
  Engine(Graph optimized, const BuildConfig& config, std::vector<std::string> build_log, EngineKernels kernels = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Runs on inputs in graph-input order (views are taken, not copies). When layer_ms is
  // given, each layer's time is written there (for the profiler): its wall time on the
  // host, its time between events on a device. With BuildConfig::cuda_graph a device
  // engine's first run records its layers, and later runs replay them as one CUDA graph
  // (a profiled run still runs them one by one).
  void run(const std::vector<Tensor>& inputs, std::vector<double>* layer_ms = nullptr);
  // Runs the same plan and returns a copy of every tensor it computes, by value name
  // (for debugging: looking at intermediates never changes the plan being timed).
  std::map<std::string, Tensor> run_capture(const std::vector<Tensor>& inputs);
  // The outputs of the last run in host memory (valid until the next run): views on the
  // host, copies out of device memory on a device backend.
  std::vector<Tensor> outputs() const;
  // The device's own times for the last run; nullopt on a host backend.
  std::optional<DeviceTimes> last_device_times() const;
  // Copies (in plain layout) of what the last run kept, in the order layers computed it:
  // every tensor under mark-all (which plans no memory reuse for exactly this), else the
  // graph outputs. What `exec --fusion mark-all --save-outputs` writes.
  std::vector<std::pair<std::string, Tensor>> kept_values() const;

  // Another execution context of this engine (TensorRT's IExecutionContext), for serving
  // queries concurrently: the same plan, its layers made afresh over an activation arena of
  // its own, reading the same weights (the initializers' storage is shared, not copied, and
  // so are the CPU kernels' packed matrices and blocked filters, engine/backend/cpu/
  // shared_weights.h; a GPU layer's 16-bit copy of a constant is its own). On a device the
  // context runs on a queue of its
  // own (Backend::with_own_queue: a CUDA stream with its own handles and workspace), so
  // contexts driven from different threads run concurrently.
  std::unique_ptr<Engine> make_context() const;

  const std::vector<LayerInfo>& layers() const { return infos_; }
  const std::vector<std::string>& build_log() const { return log_; }
  void append_log(std::string line) { log_.push_back(std::move(line)); }
  // An engine loaded from a plan takes the log of the build that made it, which already
  // holds what this constructor logged then (engine/plan/plan_format.cpp).
  void replace_build_log(std::vector<std::string> log) { log_ = std::move(log); }
  const BuildConfig& config() const { return config_; }
  const Graph& graph() const { return graph_; }
  const EngineKernels& kernels() const { return kernels_; }
  // What the fusion passes did, fused and refused (empty for an engine loaded from a
  // plan: its build log has the text).
  const std::vector<FusionEvent>& fusion_events() const { return events_; }
  void set_fusion_events(std::vector<FusionEvent> events) { events_ = std::move(events); }
  size_t arena_bytes() const { return arena_bytes_; }
  // A device engine's host arena, for the values of layers that fell back to the CPU (0: none).
  size_t host_arena_bytes() const { return host_arena_.bytes(); }

 private:
  // make_context's: built on `kernels` over the initializers `uploaded` already holds in
  // that backend's memory (nullptr: uploads them).
  Engine(Graph optimized, const BuildConfig& config, std::vector<std::string> build_log, EngineKernels kernels,
         const std::map<std::string, Tensor>* uploaded);

  Graph graph_;
  BuildConfig config_;
  std::vector<std::string> log_;
  std::vector<FusionEvent> events_;
  EngineKernels kernels_;                  // before the layers: they point into the registry
  std::map<std::string, Tensor> constants_;  // the initializers as the backend holds them
  std::vector<Tensor> slots_;              // one per value; addresses stable after build
  std::vector<int> input_slots_, output_slots_;
  std::vector<std::pair<int, int>> input_aliases_;  // (slot, input index): views of graph inputs
  std::vector<std::unique_ptr<Layer>> layers_;      // nullptr for view layers
  std::vector<std::vector<std::pair<std::string, Tensor*>>> layer_outputs_;  // per layer: value name, slot
  std::vector<LayerInfo> infos_;
  DeviceBuffer arena_;
  size_t arena_bytes_ = 0;
  // A device build's CPU fallback (Node::on_host): the CPU backend, the host arena its
  // layers' values live in, and host views of the initializers they read.
  std::shared_ptr<const Backend> host_backend_;
  DeviceBuffer host_arena_;
  std::map<std::string, Tensor> host_constants_;
  std::vector<bool> is_device_copy_;  // per layer: a copy between the two (its output duplicates a value)
  // Device backends: the graph inputs' buffers, the outputs' host copies, the timers.
  std::vector<DeviceBuffer> input_buffers_;
  mutable std::vector<Tensor> host_outputs_;
  mutable double d2h_ms_ = 0;
  std::unique_ptr<DeviceTimer> h2d_timer_, compute_timer_;
  std::vector<std::unique_ptr<DeviceTimer>> layer_timers_;  // a profiled run's, per layer (nullptr: a view)
  // BuildConfig::cuda_graph: the layers recorded once (after the first run), replayed after.
  std::unique_ptr<RecordedWork> recorded_;
  std::unique_ptr<RecordedWork> record_layers() const;
};

}  // namespace fb
