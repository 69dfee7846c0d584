// A kernel backend: what turns an optimized graph's nodes into runnable layers on one
// kind of device (ggml's ggml-backend.h, ONNX Runtime's execution providers). The op
// definitions (engine/ops/: shapes, attributes, dtypes, the CPU kernels the reference
// executor runs) live once, every op's there; a backend's kernels live only here. Where
// an op's host kernel is a backend's (Conv, MatMul/Gemm, Attention on oneDNN), its row
// computes through what bind_host_kernels() binds (engine/ops/bound_kernels.h). What
// fused nodes carry is read through engine/ops/fused_activation.h and fused_conv.h by
// every backend. A backend says which nodes it can run at which
// precisions and in which layouts, makes their layers, and owns the memory they run in.
// Passes ask it (PassContext::backend) instead of naming one.
//
//   cpu/   oneDNN primitives and the engine's own kernels, on host memory
//   cuda/  cuBLASLt, cuDNN and kernels of our own on one CUDA device (built when the CUDA
//          toolkit is found: FUSEBENCH_HAVE_CUDA). Buffers are DeviceBuffers that say where
//          they live; initializers reach the device through upload(); a layer's run()
//          enqueues on the backend's stream, and the engine calls synchronize() before it
//          reads outputs or stops a layer's clock.
//
// Adding a backend: implement this interface in backend/NAME/, and add it to
// backend_named() (backend.cpp). Adding a kernel to the CPU backend: a Layer class in
// backend/cpu/ and a line in CpuBackend::make_layer (cpu_backend.cpp); to the CUDA
// backend, a row in its table (cuda/cuda_layer_table.h). An op with no dedicated CPU
// layer runs its OpDef::compute from the engine's op registry, which is how a plugin's
// kernel runs (engine/ops/op_registry.h: OpRegistry::add before seal()).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/backend/layer.h"
#include "engine/ir/precision.h"
#include "engine/ops/op_registry.h"

namespace fb {

// What a device can do at best, as measured on this machine: what profile sets each layer's
// rate against ("% of peak").
struct MachinePeaks {
  double gflops = 0;  // float32 matrix products
  double gbps = 0;    // memory bandwidth (read + write)
};

// Memory a backend allocated, released through the backend's own release function.
// data() is an address on `device()`: host code may only dereference Host memory.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(void* data, size_t bytes, Device device, void (*release)(void*))
      : data_(data, release ? release : [](void*) {}), bytes_(bytes), device_(device) {}
  void* data() const { return data_.get(); }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  std::unique_ptr<void, void (*)(void*)> data_{nullptr, [](void*) {}};
  size_t bytes_ = 0;
  Device device_ = Device::Host;
};

// What a backend needs to make one layer. The tensors are the engine's slots: views into
// memory this backend allocated (or uploaded), stable for the engine's life, their
// shapes final.
struct LayerRequest {
  const Node& node;
  const OpDef& def;                    // the op's definition in the engine's registry
  const OpRegistry& ops;               // that registry (an If/Loop body runs its nodes from it)
  std::vector<const Tensor*> inputs;   // nullptr for an omitted optional input
  std::vector<Tensor*> outputs;        // nullptr for an omitted optional output
  std::vector<bool> constant_inputs;   // per input: an initializer, never changed between runs
  // Per input: the initializer's host copy where it is one (nullptr otherwise), for a
  // device backend's layer that needs a constant's values at build time (Clip's bounds,
  // Pad's pads) while `inputs` points into device memory.
  std::vector<const Tensor*> host_constants{};
  bool winograd = true;                // the build allows Winograd convolutions (BuildConfig::winograd)
  bool time_algorithms = false;        // a device layer may time its library's algorithms (BuildConfig::time_algorithms)
  bool cuda_graph = false;             // the engine replays its layers as one CUDA graph (BuildConfig::cuda_graph)
  // Input 1 (the weights) is constant: a kernel may repack it once.
  bool weights_constant() const { return constant_inputs.size() > 1 && constant_inputs[1]; }
};

// Brackets work queued on a backend for timing: CUDA events on its stream (the GPU's own
// clock, as trtexec's "GPU Compute Time"); a host backend has none (make_timer: nullptr).
class DeviceTimer {
 public:
  virtual ~DeviceTimer() = default;
  virtual void start() = 0;
  virtual void stop() = 0;
  // Milliseconds between start and stop; waits for stop to be reached.
  virtual double elapsed_ms() = 0;
};

// Work a backend recorded from its queue once and replays as one launch (a CUDA graph:
// the engine's whole plan for its shapes, as TensorRT's and PyTorch's CUDA graphs).
class RecordedWork {
 public:
  virtual ~RecordedWork() = default;
  virtual void replay() = 0;  // queues the recorded work again, on the queue it was recorded from
};

// What Backend::describe_device says: versions as "13.0" or "9.10.2", "" where unknown.
struct DeviceDescription {
  std::string name;  // "NVIDIA H200"
  std::string uuid;  // "GPU-8c6f...": the device whatever its index (CUDA_VISIBLE_DEVICES)
  std::string runtime, cublas, cudnn;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "cpu", "cuda"
  // The device string a case names it by: "cpu", "cuda:0".
  virtual std::string device_name() const { return name(); }
  virtual Device device() const = 0;     // where its buffers live
  // The precisions this backend can run `node` in (empty: it cannot run it at all).
  // `def` is the node's op definition; its `precisions` say what the op's own kernel takes.
  virtual PrecisionSet supported_precisions(const Node& node, const OpDef& def) const = 0;
  bool supports(const Node& node, const OpDef& def, Precision p) const { return supported_precisions(node, def).contains(p); }
  // The layer that runs `request.node`; Error naming the node when it cannot.
  virtual std::unique_ptr<Layer> make_layer(const LayerRequest& request) const = 0;
  // `bytes` of uninitialized device memory, aligned for any kernel; Error when out of memory.
  virtual DeviceBuffer allocate(size_t bytes) const = 0;
  // The constant `host` as a tensor the backend's layers can read (the same tensor on
  // the CPU backend, a device copy elsewhere). The result must outlive the layers.
  virtual Tensor upload(const Tensor& host) const = 0;
  // Returns when every layer run so far has finished.
  virtual void synchronize() const = 0;
  // Copies between host memory and this backend's, queued after the work before them
  // (a host backend copies at once). The host source of copy_to_device may be reused once
  // the call returns (CUDA stages a copy from pageable memory before returning).
  virtual void copy_to_device(void* dst, const void* host_src, size_t bytes) const = 0;
  virtual void copy_to_host(void* host_dst, const void* src, size_t bytes) const = 0;
  // A host copy of one of its tensors (after the work queued so far).
  virtual Tensor to_host(const Tensor& t) const = 0;
  // Whether this backend runs `node` with its activations channels-last as the conv-layout
  // pass would mark it (x_layout, residual_layout, y_layout = "channels_last":
  // engine/ops/fused_conv.h). The pass asks only of nodes it could mark (convolutions, 2-D
  // transposed convolutions, GlobalAveragePool and the layout-tied ops it names) and marks
  // only those answered yes; a Transpose or Reshape it turns into a view runs no kernel and
  // is not asked. `build_precision` is the build's (BuildConfig::precision): a backend may
  // want channels-last only at some (the CUDA backend: where convolutions run on tensor
  // cores). Default: no node (every activation plain NCHW).
  virtual bool runs_channels_last(const Node& node, Precision build_precision) const {
    (void)node;
    (void)build_precision;
    return false;
  }
  // What the build log says of how this backend runs a build with reduced-precision layers
  // (the CPU: which oneDNN ISA, whether bf16 products run on bf16 kernels); "" for nothing.
  virtual std::string reduced_precision_note() const { return ""; }
  // The libraries its kernels come from and their versions as loaded, for a run's record
  // ({"onednn": "2.6.3"} on the CPU).
  virtual std::map<std::string, std::string> library_versions() const { return {}; }
  // The device's peaks measured now, on the caller's threads; nullopt where this backend
  // does not measure them (a profile then sets no layer against a peak).
  virtual std::optional<MachinePeaks> measure_peaks(int threads) const { return std::nullopt; }
  // The native queue a plugin running on this device enqueues on (a cudaStream_t); nullptr
  // on the host.
  virtual void* native_stream() const { return nullptr; }
  // The same device behind a queue of its own (a CUDA stream with its own library handles
  // and workspace), for an execution context that runs beside this one; nullptr where a
  // backend has one queue for everything (the host: its contexts differ by threads).
  virtual std::shared_ptr<const Backend> with_own_queue() const { return nullptr; }
  // The device memory free now (cudaMemGetInfo); nullopt on the host.
  virtual std::optional<size_t> free_device_bytes() const { return std::nullopt; }
  // Makes this backend's device the calling thread's current one (a thread other than the
  // one that built the engine may run it); nothing on the host.
  virtual void use_on_this_thread() const {}
  // A timer on this backend's queue; nullptr where the host's clock is the device's.
  virtual std::unique_ptr<DeviceTimer> make_timer() const { return nullptr; }
  // Records what `enqueue` queues on this backend's queue, without running it, for replay;
  // nullptr where the backend cannot record (the host). Error saying why when the work
  // cannot be recorded (a step that waits for the device or runs on the host); an
  // exception from `enqueue` ends the recording and propagates.
  virtual std::unique_ptr<RecordedWork> record(const std::function<void()>& enqueue) const {
    (void)enqueue;
    return nullptr;
  }
  // "NVIDIA H200 (sm_90, GPU-…)": what a plan records and checks; "" for the host (a
  // plan records the CPU separately).
  virtual std::string device_identity() const { return ""; }
  // The device and the libraries its layers run on, as a case records them beside the
  // device's state (harness/measure/gpu_monitor.h finds the device by `uuid`); empty for the host.
  virtual DeviceDescription describe_device() const { return {}; }
};

// The backend for a device string: "cpu", "cuda" (device 0) or "cuda:N", one per device
// per process. Error naming the device and what was found where it cannot be used (no
// driver, no device, this build has no CUDA backend), or listing the known names.
std::shared_ptr<const Backend> backend_named(const std::string& device);
// Binds the host's kernels to the op rows engine/ops defines but does not compute (the CPU
// backend's oneDNN ones: cpu/cpu_kernels.h), once per process: the reference executor,
// the builder and the CPU backend call it before they run a node.
void bind_host_kernels();
// Whether `device` is a device string ("cpu", "cuda", "cuda:N"), whatever this build and
// machine have; and N of "cuda:N" (0 for "cuda"), Error for a string of another form.
bool is_device_name(const std::string& device);
int cuda_device_index(const std::string& device);
// How many CUDA devices this process sees: 0 in a build without the CUDA backend or on a
// machine without a usable driver.
int cuda_device_count();

}  // namespace fb
