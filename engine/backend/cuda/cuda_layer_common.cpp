// What every CUDA layer shares: errors from the CUDA runtime, cuBLASLt and cuDNN as the
// engine's Error, host copies of device tensors, and the float element type kernels take.
#include <string>

#include "engine/backend/cuda/cuda_context.h"
#include "engine/backend/cuda/cuda_layer_table.h"
#include "engine/backend/cuda/epilogue_kernels.h"
#include "engine/ops/half_float.h"

namespace fb::cuda {

namespace {

// cuBLAS's own cublasGetStatusName lives in libcublas, which a cuBLASLt-only link lacks.
const char* cublas_status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "unknown cuBLAS status";
}

[[noreturn]] void fail(const char* call, const std::string& what, int code) {
  throw Error(std::string(call) + " failed: " + what + " (" + std::to_string(code) + ")");
}

}  // namespace

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) fail(call, cudaGetErrorString(status), int(status));
}

void check(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) fail(call, cublas_status_name(status), int(status));
}

void check(cudnnStatus_t status, const char* call) {
  if (status != CUDNN_STATUS_SUCCESS) fail(call, cudnnGetErrorString(status), int(status));
}

Tensor to_host(const Tensor& device_tensor, cudaStream_t stream) {
  Tensor host = Tensor::empty(device_tensor.dtype(), device_tensor.shape());
  FB_CUDA(cudaStreamSynchronize(stream));
  if (host.nbytes()) FB_CUDA(cudaMemcpy(host.raw(), device_tensor.raw(), host.nbytes(), cudaMemcpyDeviceToHost));
  return host;
}

Tensor CudaLayer::plain_copy(const Tensor& output) const { return to_host(output, ctx_.stream); }

const char* kernel_suffix(Elem e, Precision p) {
  if (e == Elem::F16) return " fp16";
  if (e == Elem::BF16) return " bf16";
  return p == Precision::TF32 ? " tf32" : "";
}

Elem elem_of(const Tensor& t) {
  switch (t.dtype()) {
    case DType::Float32: return Elem::F32;
    case DType::Float16: return Elem::F16;
    case DType::BFloat16: return Elem::BF16;
    default: throw Error("CUDA kernels take float32, float16 or bfloat16 tensors, not " + dtype_name(t.dtype()));
  }
}

DeviceMemory::DeviceMemory(size_t bytes) {
  if (bytes) FB_CUDA(cudaMalloc(&data_, bytes));
}

DeviceMemory::DeviceMemory(const void* host, size_t bytes) : DeviceMemory(bytes) {
  if (!bytes) return;
  const cudaError_t copied = cudaMemcpy(data_, host, bytes, cudaMemcpyHostToDevice);
  if (copied != cudaSuccess) cudaFree(data_), data_ = nullptr;  // no destructor runs for a constructor that throws
  check(copied, "cudaMemcpy (a layer's tables to the device)");
}

DeviceMemory& DeviceMemory::operator=(DeviceMemory&& o) noexcept {
  if (this != &o) {
    if (data_) cudaFree(data_);
    data_ = o.data_;
    o.data_ = nullptr;
  }
  return *this;
}

DeviceMemory::~DeviceMemory() {
  if (data_) cudaFree(data_);  // a failure here has no one to report to
}

const void* input_as(const LayerRequest& r, size_t i, DType want, DeviceMemory& keep) {
  const Tensor& t = *r.inputs[i];
  if (t.dtype() == want) return t.raw();
  const Tensor* host = i < r.host_constants.size() ? r.host_constants[i] : nullptr;
  if (!host || host->dtype() != DType::Float32 || !is_half_type(want))
    throw Error(r.node.describe() + ": input " + std::to_string(i) + " is " + dtype_name(t.dtype()) + " and the layer runs in " +
                dtype_name(want) + "; only a constant float32 input is converted");
  Tensor narrowed(want, host->shape());
  narrow_half(*host, narrowed);
  keep = DeviceMemory(narrowed.raw(), narrowed.nbytes());
  return keep.data();
}

}  // namespace fb::cuda
