// fusebench plugin API: the one header a custom op needs. A plugin library implements
// PluginCreator (one per op type and domain) and Plugin (one per node), and exports the two
// functions FUSEBENCH_PLUGIN_LIBRARY defines. fusebench loads it with `--plugin lib.so` or a
// scenario's "plugins" list, refuses a library built against another API version (naming
// both), and runs the plugin in the engine (with the engine's threads and a workspace in
// its activation arena) and in the reference executor alike. A plugin whose creator says it
// runs on a GPU (PluginCreator::runs_on) runs there in a GPU build, on device memory and the
// engine's CUDA stream; any other runs on the CPU, with copies to and from the GPU around it.
//
// The header depends on the C++ standard library only; build the library with the same
// compiler family and standard library as fusebench (both are C++ classes across the
// boundary, as with TensorRT's IPluginV2). Find it with CMake:
//   find_package(fusebench REQUIRED CONFIG)
//   target_link_libraries(myop PRIVATE fusebench::plugin_api)
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

// Bumped on any change to the classes below or to the exported functions' signatures.
#define FUSEBENCH_PLUGIN_API_VERSION 2

namespace fusebench::plugin {

inline constexpr int kApiVersion = FUSEBENCH_PLUGIN_API_VERSION;

// Element types, numbered as ONNX's TensorProto.DataType.
enum class DataType : int32_t {
  Float32 = 1, UInt8 = 2, Int8 = 3, Int32 = 6, Int64 = 7, Bool = 9, Float16 = 10, BFloat16 = 16
};
// Where a plugin's kernel runs: the host's CPU, or a CUDA GPU.
enum class Device : int32_t { Cpu = 0, Cuda = 1 };
// How a tensor's elements lie in memory. Plain is ONNX's row-major order; ChannelsLast is
// NHWC (NDHWC) for a tensor whose shape is written NCHW.
enum class Layout : int32_t { Plain = 0, ChannelsLast = 1 };

inline size_t element_size(DataType t) {
  switch (t) {
    case DataType::UInt8: case DataType::Int8: case DataType::Bool: return 1;
    case DataType::Float16: case DataType::BFloat16: return 2;
    case DataType::Float32: case DataType::Int32: return 4;
    case DataType::Int64: return 8;
  }
  return 0;
}

struct TensorDesc {
  DataType dtype = DataType::Float32;
  std::vector<int64_t> shape;
  Layout layout = Layout::Plain;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  size_t bytes() const { return size_t(numel()) * element_size(dtype); }
};

// Views of the engine's buffers (no ownership): host memory, or on ExecutionContext::device()
// Cuda, device memory. An output may share an input's buffer only where the plugin allowed
// it (Plugin::output_may_alias_input).
struct InputTensor {
  TensorDesc desc;
  const void* data = nullptr;
  template <typename T> const T* as() const { return static_cast<const T*>(data); }
};
struct OutputTensor {
  TensorDesc desc;
  void* data = nullptr;
  template <typename T> T* as() const { return static_cast<T*>(data); }
};

// What a plugin returns instead of throwing (throwing works too: either way the case
// fails with the plugin's name and the message, and nothing else is disturbed).
struct Status {
  bool ok = true;
  std::string message;
  static Status success() { return {}; }
  static Status error(std::string msg) { return {false, std::move(msg)}; }
};

// The node's ONNX attributes (or a scenario's "attrs"). Getters return `def` when the
// attribute is absent and throw std::runtime_error when it has another kind.
class Attributes {
 public:
  virtual ~Attributes() = default;
  virtual bool has(const std::string& name) const = 0;
  virtual int64_t get_int(const std::string& name, int64_t def) const = 0;
  virtual float get_float(const std::string& name, float def) const = 0;
  virtual std::string get_string(const std::string& name, const std::string& def) const = 0;
  virtual std::vector<int64_t> get_ints(const std::string& name) const = 0;
  virtual std::vector<float> get_floats(const std::string& name) const = 0;
};

// What execute() runs with: the engine's thread pool (the case's thread count) and the
// workspace the plugin asked for, carved out of the engine's activation arena.
class ExecutionContext {
 public:
  virtual ~ExecutionContext() = default;
  virtual int threads() const = 0;
  // Calls body(begin, end) over disjoint chunks covering [0, n), in parallel on the
  // engine's threads; chunks hold at least `grain` indices. Returns when all are done.
  virtual void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) const = 0;
  // workspace_size() bytes, 64-byte aligned, valid during this call only (the arena
  // reuses it for other layers' activations), nullptr when 0 was asked for.
  virtual void* workspace() const = 0;
  virtual size_t workspace_bytes() const = 0;
  // Where this call runs. On Cuda the tensors and the workspace are device memory, and the
  // plugin queues its work on stream() (a cudaStream_t) and returns without waiting for it,
  // as a TensorRT plugin's enqueue does; the engine's own layers follow on the same stream.
  virtual Device device() const { return Device::Cpu; }
  virtual void* stream() const { return nullptr; }
};

// One instance per node, created at build time; execute() may run many times.
class Plugin {
 public:
  virtual ~Plugin() = default;
  // The outputs' dtypes and shapes from the inputs' (layouts are decided by supports()).
  virtual Status infer(const std::vector<TensorDesc>& inputs, std::vector<TensorDesc>& outputs) const = 0;
  // Supported precisions and layouts, asked one position at a time as TensorRT's
  // supportsFormatCombination does: can tensor `index` (inputs first, then outputs) have
  // io[index].dtype and io[index].layout, given the formats io[0..index) already chosen?
  // The default takes plain float32 only.
  virtual bool supports(size_t index, const std::vector<TensorDesc>& io) const {
    return io[index].dtype == DataType::Float32 && io[index].layout == Layout::Plain;
  }
  // Scratch memory execute() needs, in bytes (planned in the engine's arena).
  virtual size_t workspace_size(const std::vector<TensorDesc>& inputs, const std::vector<TensorDesc>& outputs) const {
    return 0;
  }
  // Output `output` may be given the buffer of input `output` (same shape and dtype) when
  // that input is read by nothing after this node: an in-place kernel. The engine decides.
  virtual bool output_may_alias_input(size_t output) const { return false; }
  virtual Status execute(const std::vector<InputTensor>& inputs, const std::vector<OutputTensor>& outputs,
                         const ExecutionContext& context) = 0;
};

// Makes the plugin for one node; registered by (domain, op type).
class PluginCreator {
 public:
  virtual ~PluginCreator() = default;
  virtual std::string domain() const = 0;
  virtual std::string op_type() const = 0;
  // Throws (or returns nullptr) for attributes it cannot take; the message names the node.
  virtual std::unique_ptr<Plugin> create(const Attributes& attributes) const = 0;
  // The devices its plugins' execute() can run on; the CPU only by default.
  virtual bool runs_on(Device device) const { return device == Device::Cpu; }
};

// Handed to a library's register function.
class Registrar {
 public:
  virtual ~Registrar() = default;
  virtual void add(std::unique_ptr<PluginCreator> creator) = 0;
};

}  // namespace fusebench::plugin

// The two functions a plugin library exports (C names, so dlsym finds them).
#define FUSEBENCH_PLUGIN_VERSION_SYMBOL "fusebench_plugin_api_version"
#define FUSEBENCH_PLUGIN_REGISTER_SYMBOL "fusebench_register_plugins"

// Put once in a plugin library: FUSEBENCH_PLUGIN_LIBRARY(my_register) where
// `void my_register(fusebench::plugin::Registrar&)` adds the library's creators.
#define FUSEBENCH_PLUGIN_LIBRARY(register_function)                                                   \
  extern "C" __attribute__((visibility("default"))) int fusebench_plugin_api_version() {              \
    return FUSEBENCH_PLUGIN_API_VERSION;                                                              \
  }                                                                                                   \
  extern "C" __attribute__((visibility("default"))) void fusebench_register_plugins(                 \
      fusebench::plugin::Registrar* registrar) {                                                      \
    register_function(*registrar);                                                                    \
  }
