// What every CUDA layer runs with: the device, the backend's one stream (layers enqueue
// on it in order; the engine synchronizes it before reading outputs or stopping a clock),
// the library handles and a shared workspace. One per CudaBackend, made once.
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>

namespace fb::cuda {

// An Error naming the call and the library's message.
void check(cudaError_t status, const char* call);
void check(cublasStatus_t status, const char* call);
void check(cudnnStatus_t status, const char* call);
#define FB_CUDA(call) ::fb::cuda::check((call), #call)

struct CudaContext {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t blas_lt = nullptr;
  cublasHandle_t blas = nullptr;  // batched products over pointer arrays (attention's heads)
  cudnnHandle_t cudnn = nullptr;
  // Scratch for cuBLASLt and cuDNN, used by one layer at a time (the stream orders them).
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  int multiprocessors = 0;  // the device's SMs: how many blocks a kernel needs to fill it
};

}  // namespace fb::cuda
