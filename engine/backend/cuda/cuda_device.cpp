#include "engine/backend/cuda/cuda_device.h"

#include <cuda_runtime.h>

#include <cstdio>

#include "engine/ir/error.h"

namespace fb::cuda {

namespace {

// What a failed first CUDA call means, in the words a user needs.
std::string what_was_found(cudaError_t e) {
  switch (e) {
    case cudaErrorNoDevice: return "no CUDA device (the driver sees none)";
    case cudaErrorInsufficientDriver: return "no usable NVIDIA driver (missing, or older than this build's CUDA runtime)";
    case cudaErrorDevicesUnavailable: return "the device is busy or unavailable (exclusive-process mode, held by another process?)";
    case cudaErrorInvalidDevice: return "no such device";
    default: return cudaGetErrorString(e);
  }
}

std::string uuid_string(const cudaUUID_t& u) {
  char s[48];
  const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
  std::snprintf(s, sizeof s, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
                b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return s;
}

}  // namespace

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

DeviceProperties probe_device(int index) {
  const std::string asked = "cuda:" + std::to_string(index);
  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    cudaGetLastError();  // clear it, so a later CUDA call does not report it again
    throw Error("device " + asked + ": " + what_was_found(e));
  }
  if (index >= count)
    throw Error("device " + asked + ": no such device (this machine has " + std::to_string(count) + " CUDA device" +
                (count == 1 ? "" : "s") + ")");
  cudaDeviceProp p{};
  if (const cudaError_t e = cudaGetDeviceProperties(&p, index); e != cudaSuccess)
    throw Error("device " + asked + ": " + what_was_found(e));
  int mode = cudaComputeModeDefault;
  cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, index);
  if (mode == cudaComputeModeProhibited) throw Error("device " + asked + ": compute is prohibited on it (nvidia-smi -c)");
  // A context is made here, so a device another process holds exclusively fails now.
  if (const cudaError_t e = cudaSetDevice(index); e != cudaSuccess) throw Error("device " + asked + ": " + what_was_found(e));
  if (const cudaError_t e = cudaFree(nullptr); e != cudaSuccess) {
    cudaGetLastError();
    throw Error("device " + asked + " (" + p.name + "): " + what_was_found(e));
  }
  DeviceProperties d;
  d.index = index;
  d.name = p.name;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.uuid = uuid_string(p.uuid);
  d.memory_bytes = p.totalGlobalMem;
  d.multiprocessors = p.multiProcessorCount;
  cudaDriverGetVersion(&d.driver_version);
  cudaRuntimeGetVersion(&d.runtime_version);
  return d;
}

}  // namespace fb::cuda
