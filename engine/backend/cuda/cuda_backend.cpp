#include "engine/backend/cuda/cuda_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>

#include "engine/ops/fused_conv.h"
#include "engine/ops/half_float.h"

namespace fb::cuda {

namespace {

// cuBLASLt's and cuDNN's scratch: the largest any layer may ask for (algorithms wanting
// more are passed over when a layer is made).
constexpr size_t kWorkspaceBytes = size_t(64) << 20;

class EventTimer final : public DeviceTimer {
 public:
  explicit EventTimer(cudaStream_t stream) : stream_(stream) {
    FB_CUDA(cudaEventCreate(&start_));
    FB_CUDA(cudaEventCreate(&stop_));
  }
  ~EventTimer() override {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  void start() override { FB_CUDA(cudaEventRecord(start_, stream_)); }
  void stop() override { FB_CUDA(cudaEventRecord(stop_, stream_)); }
  double elapsed_ms() override {
    FB_CUDA(cudaEventSynchronize(stop_));
    float ms = 0;
    FB_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
    return ms;
  }

 private:
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

// A CUDA graph of the work queued between cudaStreamBeginCapture and EndCapture.
class CudaGraph final : public RecordedWork {
 public:
  CudaGraph(cudaGraphExec_t exec, cudaStream_t stream) : exec_(exec), stream_(stream) {}
  ~CudaGraph() override { cudaGraphExecDestroy(exec_); }
  void replay() override { FB_CUDA(cudaGraphLaunch(exec_, stream_)); }

 private:
  cudaGraphExec_t exec_;
  cudaStream_t stream_;
};

// A data-movement layer of a 16-bit layer whose constant inputs came as float32 (a
// Gather's embedding table, a Concat's class token: precision lowering leaves
// initializers float32, and the CPU's HalfStorageLayer widens around them): the constants
// are converted to the output's type once, and the inner layer reads those.
class ConvertedConstantsLayer final : public Layer {
 public:
  ConvertedConstantsLayer(const LayerRequest& r, const CudaOpRow& row, const CudaContext& ctx) {
    LayerRequest inner = r;
    const DType want = r.outputs[0]->dtype();
    for (size_t i = 0; i < r.inputs.size(); ++i) {
      const Tensor* host = i < r.host_constants.size() ? r.host_constants[i] : nullptr;
      if (!host || !r.inputs[i] || r.inputs[i]->dtype() != DType::Float32) continue;
      kept_.emplace_back();
      const void* p = input_as(r, i, want, kept_.back());
      views_.push_back(std::make_unique<Tensor>(Tensor::view(want, r.inputs[i]->shape(), const_cast<void*>(p), Device::Cuda)));
      inner.inputs[i] = views_.back().get();
    }
    inner_ = row.make(inner, ctx);
  }
  void run() override { inner_->run(); }
  std::string kernel() const override { return inner_->kernel(); }
  double flops() const override { return inner_->flops(); }
  Tensor plain_copy(const Tensor& output) const override { return inner_->plain_copy(output); }

 private:
  std::deque<DeviceMemory> kept_;              // stable addresses: views_ point into them
  std::vector<std::unique_ptr<Tensor>> views_;  // stable addresses: the inner layer keeps pointers
  std::unique_ptr<Layer> inner_;
};

// A layer whose outputs of rank 3 to 5 hold channels-last bytes under their logical
// shapes (y_layout): captures come back plain.
class ChannelsLastOutputLayer final : public Layer {
 public:
  explicit ChannelsLastOutputLayer(std::unique_ptr<Layer> inner) : inner_(std::move(inner)) {}
  void run() override { inner_->run(); }
  std::string kernel() const override { return inner_->kernel(); }
  double flops() const override { return inner_->flops(); }
  Tensor plain_copy(const Tensor& output) const override {
    Tensor host = inner_->plain_copy(output);
    return host.rank() >= 3 ? channels_last_to_plain(host) : host;
  }

 private:
  std::unique_ptr<Layer> inner_;
};

// FUSEBENCH_CUDA_CHANNELS_LAST=0 keeps every activation plain NCHW (an A/B of the layouts);
// unset or 1: channels-last where a row can.
bool channels_last_wanted() {
  const char* v = std::getenv("FUSEBENCH_CUDA_CHANNELS_LAST");
  if (!v || std::strcmp(v, "1") == 0) return true;
  if (std::strcmp(v, "0") == 0) return false;
  throw Error(std::string("FUSEBENCH_CUDA_CHANNELS_LAST='") + v + "': 0 (plain NCHW) or 1 (channels-last, the default)");
}

}  // namespace

CudaBackend::CudaBackend(int device_index) : props_(probe_device(device_index)) {
  ctx_.device = device_index;
  open_queue();
  add_elementwise_rows(rows_);
  add_normalization_rows(rows_);
  moves_bytes_begin_ = rows_.size();
  add_data_movement_rows(rows_);
  moves_bytes_end_ = rows_.size();
  add_matmul_rows(rows_);
  add_conv_rows(rows_);
}

CudaBackend::CudaBackend(const CudaBackend& same_device, OwnQueue)
    : props_(same_device.props_),
      rows_(same_device.rows_),
      moves_bytes_begin_(same_device.moves_bytes_begin_),
      moves_bytes_end_(same_device.moves_bytes_end_) {
  ctx_.device = same_device.ctx_.device;
  open_queue();
}

void CudaBackend::open_queue() {
  FB_CUDA(cudaSetDevice(ctx_.device));
  FB_CUDA(cudaStreamCreateWithFlags(&ctx_.stream, cudaStreamNonBlocking));
  FB_CUDA(cublasLtCreate(&ctx_.blas_lt));
  FB_CUDA(cublasCreate(&ctx_.blas));
  FB_CUDA(cublasSetStream(ctx_.blas, ctx_.stream));
  // Full fp32 arithmetic unless a layer asks for tensor cores (TF32 off, as the issue's
  // reference and PyTorch with allow_tf32 = False).
  FB_CUDA(cublasSetMathMode(ctx_.blas, CUBLAS_PEDANTIC_MATH));
  FB_CUDA(cudnnCreate(&ctx_.cudnn));
  FB_CUDA(cudnnSetStream(ctx_.cudnn, ctx_.stream));
  FB_CUDA(cudaMalloc(&ctx_.workspace, kWorkspaceBytes));
  ctx_.workspace_bytes = kWorkspaceBytes;
  ctx_.multiprocessors = props_.multiprocessors;
}

CudaBackend::~CudaBackend() {
  // Process exit may come after the driver unloaded: errors here are not reported.
  cudaFree(ctx_.workspace);
  cudnnDestroy(ctx_.cudnn);
  cublasDestroy(ctx_.blas);
  cublasLtDestroy(ctx_.blas_lt);
  cudaStreamDestroy(ctx_.stream);
}

std::shared_ptr<const Backend> CudaBackend::with_own_queue() const {
  return std::shared_ptr<const Backend>(new CudaBackend(*this, OwnQueue{}));
}

void CudaBackend::use_on_this_thread() const { FB_CUDA(cudaSetDevice(ctx_.device)); }

std::optional<size_t> CudaBackend::free_device_bytes() const {
  FB_CUDA(cudaSetDevice(ctx_.device));
  size_t free = 0, total = 0;
  FB_CUDA(cudaMemGetInfo(&free, &total));
  return free;
}

const CudaOpRow* CudaBackend::row_for(const Node& node) const {
  for (const CudaOpRow& r : rows_)
    if (node.domain == r.domain && node.op_type == r.op_type) return &r;
  return nullptr;
}

bool CudaBackend::layer_reads_layouts(const Node& node) const {
  const CudaOpRow* r = row_for(node);
  return r && r->channels_last && r->channels_last(node);
}

// Channels-last pays where cuDNN's NHWC kernels run on tensor cores (fp16, bf16, tf32
// builds): ResNet-50 at batch 32 on an H200 in a CUDA graph, fp16 2.670 ms NHWC against
// 4.124 NCHW; in full fp32 (FMA math) its NHWC kernels were slower, 15.1 ms against about
// 12 (docs/gpu.md). Judged on the build's precision, not a constraint's per layer.
bool CudaBackend::runs_channels_last(const Node& node, Precision build_precision) const {
  const bool tensor_cores = build_precision == Precision::FP16 || build_precision == Precision::BF16 || build_precision == Precision::TF32;
  return channels_last_wanted() && tensor_cores && layer_reads_layouts(node);
}

PrecisionSet CudaBackend::supported_precisions(const Node& node, const OpDef& def) const {
  // A view (Reshape, Flatten, ...) is no layer: the engine aliases its input's bytes.
  if (def.alias_input0) return {Precision::FP32, Precision::FP16, Precision::BF16};
  // Layouts its layer cannot read (marked for the CPU's): it would misread the bytes.
  const bool laid_out = node.has_attr("x_layout") || node.has_attr("y_layout") || node.has_attr("residual_layout");
  if (laid_out && !layer_reads_layouts(node)) return {};
  const CudaOpRow* r = row_for(node);
  return r ? r->precisions(node) : PrecisionSet{};
}

std::unique_ptr<Layer> CudaBackend::make_layer(const LayerRequest& request) const {
  const CudaOpRow* r = row_for(request.node);
  const std::string op = (request.node.domain.empty() ? "" : request.node.domain + ".") + request.node.op_type;
  if (!r) throw Error(request.node.describe() + ": the CUDA backend has no kernel for " + op);
  if (r->precisions(request.node).empty())
    throw Error(request.node.describe() + ": the CUDA backend cannot run this " + op + " (its attributes)");
  FB_CUDA(cudaSetDevice(ctx_.device));
  const size_t index = size_t(r - rows_.data());
  const bool moves_bytes = index >= moves_bytes_begin_ && index < moves_bytes_end_;
  std::unique_ptr<Layer> layer;
  if (moves_bytes && !request.outputs.empty() && request.outputs[0] && is_half_type(request.outputs[0]->dtype()))
    layer = std::make_unique<ConvertedConstantsLayer>(request, *r, ctx_);
  else
    layer = r->make(request, ctx_);
  if (layout_is_channels_last(request.node, "y_layout")) return std::make_unique<ChannelsLastOutputLayer>(std::move(layer));
  return layer;
}

DeviceBuffer CudaBackend::allocate(size_t bytes) const {
  FB_CUDA(cudaSetDevice(ctx_.device));
  void* p = nullptr;
  if (bytes == 0) return DeviceBuffer(nullptr, 0, Device::Cuda, nullptr);
  if (const cudaError_t e = cudaMalloc(&p, bytes); e != cudaSuccess) {
    cudaGetLastError();
    throw Error("out of device memory allocating " + std::to_string(bytes) + " bytes on " + device_name() + " (" +
                cudaGetErrorString(e) + ")");
  }
  return DeviceBuffer(p, bytes, Device::Cuda, [](void* q) { cudaFree(q); });
}

Tensor CudaBackend::upload(const Tensor& host) const {
  FB_CHECK(host.device() == Device::Host, "upload of a tensor that is not in host memory");
  FB_CUDA(cudaSetDevice(ctx_.device));
  void* p = nullptr;
  if (const cudaError_t e = cudaMalloc(&p, std::max<size_t>(host.nbytes(), 1)); e != cudaSuccess) {
    cudaGetLastError();
    throw Error("out of device memory uploading a " + std::to_string(host.nbytes()) + "-byte constant to " + device_name());
  }
  std::shared_ptr<std::byte> storage(static_cast<std::byte*>(p), [](std::byte* q) { cudaFree(q); });
  if (host.nbytes()) FB_CUDA(cudaMemcpy(p, host.raw(), host.nbytes(), cudaMemcpyHostToDevice));
  return Tensor::adopt(host.dtype(), host.shape(), std::move(storage), Device::Cuda);
}

void CudaBackend::synchronize() const { FB_CUDA(cudaStreamSynchronize(ctx_.stream)); }

void CudaBackend::copy_to_device(void* dst, const void* host_src, size_t bytes) const {
  if (bytes) FB_CUDA(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, ctx_.stream));
}

void CudaBackend::copy_to_host(void* host_dst, const void* src, size_t bytes) const {
  if (bytes) FB_CUDA(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, ctx_.stream));
}

Tensor CudaBackend::to_host(const Tensor& t) const { return cuda::to_host(t, ctx_.stream); }

std::unique_ptr<DeviceTimer> CudaBackend::make_timer() const { return std::make_unique<EventTimer>(ctx_.stream); }

std::unique_ptr<RecordedWork> CudaBackend::record(const std::function<void()>& enqueue) const {
  FB_CUDA(cudaSetDevice(ctx_.device));
  // Thread-local: a call that could wait for the device (a synchronize, a blocking copy)
  // from this thread fails the capture instead of silently running outside it.
  FB_CUDA(cudaStreamBeginCapture(ctx_.stream, cudaStreamCaptureModeThreadLocal));
  cudaGraph_t graph = nullptr;
  try {
    enqueue();
  } catch (...) {
    cudaStreamEndCapture(ctx_.stream, &graph);
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();  // the capture's error is reported by the exception
    throw;
  }
  if (const cudaError_t e = cudaStreamEndCapture(ctx_.stream, &graph); e != cudaSuccess) {
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    throw Error(std::string("a CUDA graph could not be recorded: ") + cudaGetErrorString(e));
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw Error(std::string("a CUDA graph could not be instantiated: ") + cudaGetErrorString(e));
  }
  return std::make_unique<CudaGraph>(exec, ctx_.stream);
}

std::string CudaBackend::device_identity() const {
  return props_.name + " (sm_" + std::to_string(props_.cc_major) + std::to_string(props_.cc_minor) + ")";
}

DeviceDescription CudaBackend::describe_device() const {
  // The libraries actually loaded, which may differ from the headers this was built with.
  // cudart: 13000 = 13.0; cuBLAS and cuDNN: major * 10000 + minor * 100 + patch.
  auto dotted = [](size_t v) {
    return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
  };
  const int rt = props_.runtime_version;
  return {props_.name, props_.uuid, std::to_string(rt / 1000) + "." + std::to_string(rt % 1000 / 10),
          dotted(cublasLtGetVersion()), dotted(cudnnGetVersion())};
}

}  // namespace fb::cuda
