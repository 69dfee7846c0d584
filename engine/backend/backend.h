// A kernel backend: what turns an optimized graph's nodes into runnable layers on one
// kind of device (ggml's ggml-backend.h, ONNX Runtime's execution providers). The op
// definitions (engine/ops/: shapes, attributes, dtypes, the portable kernels the
// reference executor runs) live once; a backend says which nodes it can run at which
// precisions, makes their layers, and owns the memory they run in.
//
//   cpu/   oneDNN primitives and the engine's own kernels, on host memory (the only one)
//   cuda/  later: nothing here assumes host memory. Buffers are DeviceBuffers that say
//          where they live; initializers reach the device through upload(); a layer's
//          run() may be asynchronous, and the engine calls synchronize() before it reads
//          outputs or stops a layer's clock.
//
// Adding a backend: implement this interface in backend/NAME/, and add it to
// backend_named() (backend.cpp). Adding a kernel to the CPU backend: a Layer class in
// backend/cpu/ and a line in CpuBackend::make_layer (cpu_backend.cpp). An op with no
// dedicated layer runs its OpDef::compute from the engine's op registry, which is how a
// plugin's kernel runs (engine/ops/op_registry.h: OpRegistry::add before seal()).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/backend/layer.h"
#include "engine/ir/precision.h"
#include "engine/ops/op_registry.h"

namespace fb {

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
  bool winograd = true;                // the build allows Winograd convolutions (BuildConfig::winograd)
  // Input 1 (the weights) is constant: a kernel may repack it once.
  bool weights_constant() const { return constant_inputs.size() > 1 && constant_inputs[1]; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "cpu"
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
};

// The backend called `name` ("cpu"); Error listing the known names for another.
std::shared_ptr<const Backend> backend_named(const std::string& name);

}  // namespace fb
