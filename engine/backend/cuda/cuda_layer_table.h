// Which ops the CUDA backend runs and how: one row per op, each row's layer made from the
// node, its tensors (device memory, shapes final) and the backend's context. The backend
// answers supported_precisions() from these rows, so passes ask instead of naming it.
// A node with no row, or whose row's `supports` says no, has no CUDA layer: the build
// fails naming the node and op.
#pragma once
#include <memory>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cuda/cuda_context.h"

namespace fb::cuda {

// What makes a layer of a node: its tensors (device memory, shapes final) and the context.
using LayerMaker = std::unique_ptr<Layer> (*)(const LayerRequest& request, const CudaContext& ctx);

struct CudaOpRow {
  const char* domain;   // "" for ONNX, "fusebench" for the engine's fused ops
  const char* op_type;
  // The precisions this node can run in on the GPU (empty: it cannot run it). Checked
  // at build time, before any tensor exists: decide from the node's attributes alone.
  PrecisionSet (*precisions)(const Node& node);
  // The layer; an Error naming the node for a case the row cannot run after all (an
  // attribute or shape `precisions` could not see).
  LayerMaker make;
  // Whether its layer runs this node channels-last as the conv-layout pass marks it
  // (Backend::runs_channels_last); nullptr: plain NCHW only.
  bool (*channels_last)(const Node& node) = nullptr;
};

// Rows by family, each in its own file.
void add_elementwise_rows(std::vector<CudaOpRow>& rows);    // cuda_elementwise_layers.cpp
void add_normalization_rows(std::vector<CudaOpRow>& rows);  // cuda_normalization_layers.cpp
void add_data_movement_rows(std::vector<CudaOpRow>& rows);  // cuda_data_movement_layers.cpp
void add_matmul_rows(std::vector<CudaOpRow>& rows);         // cuda_matmul_layers.cpp
void add_conv_rows(std::vector<CudaOpRow>& rows);           // cuda_conv_layers.cpp

// The channels-last predicate of a row whose layer runs every node it takes channels-last.
inline bool always_channels_last(const Node&) { return true; }
// ...and of Concat's and Split's rows: the ones over the channels (axis 1).
bool over_channels(const Node& node);
// A layout-tied node marked channels-last made by `make`, its plain layer, over views of its
// 4-D tensors as [N, H, W, C] (cuda_channels_last_views.cpp): Concat, Split, the channel
// gate, Resize.
std::unique_ptr<Layer> make_on_channels_last_views(const LayerRequest& r, const CudaContext& ctx, LayerMaker make);
template <LayerMaker Make>
std::unique_ptr<Layer> plain_or_on_views(const LayerRequest& r, const CudaContext& ctx) {
  return r.node.has_attr("y_layout") ? make_on_channels_last_views(r, ctx, Make) : Make(r, ctx);
}

// Base of every CUDA layer: run() enqueues on ctx.stream and returns; plain_copy brings
// an output to the host (it synchronizes the stream first).
class CudaLayer : public Layer {
 public:
  explicit CudaLayer(const CudaContext& ctx) : ctx_(ctx) {}
  Tensor plain_copy(const Tensor& output) const override;

 protected:
  const CudaContext& ctx_;
};

// Memory a layer owns on the device (tables made at build time, constants converted to its
// type, scratch), freed with the layer.
class DeviceMemory {
 public:
  DeviceMemory() = default;
  explicit DeviceMemory(size_t bytes);                 // uninitialized
  DeviceMemory(const void* host, size_t bytes);        // a copy of host bytes
  DeviceMemory(DeviceMemory&& o) noexcept : data_(o.data_) { o.data_ = nullptr; }
  DeviceMemory& operator=(DeviceMemory&& o) noexcept;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  ~DeviceMemory();
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
};

// Input `i` of a layer request as `want` (the layer's float type): its own bytes where it
// is that type already; a constant (an initializer: float32 weights, biases) converted once
// into `keep` otherwise, as the CPU backend packs its 16-bit layers' weights. Error naming
// the node, the input and both types for a non-constant input of another type.
const void* input_as(const LayerRequest& r, size_t i, DType want, DeviceMemory& keep);

// A host copy of a tensor in device memory, after everything queued on `stream`.
Tensor to_host(const Tensor& device_tensor, cudaStream_t stream);

// The element type of a float tensor as the kernels take it.
enum class Elem : int { F32, F16, BF16 };
// Error naming the tensor's dtype where it is not float32, float16 or bfloat16.
Elem elem_of(const Tensor& t);
// What a matrix layer's kernel name ends with: its tensors' type, or " tf32" for a float32
// layer whose products run on tensor cores (Precision::TF32); "" for full fp32.
const char* kernel_suffix(Elem e, Precision p);

}  // namespace fb::cuda
