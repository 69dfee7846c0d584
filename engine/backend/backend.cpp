#include "engine/backend/backend.h"

#include <map>
#include <mutex>

#include "engine/backend/cpu/cpu_backend.h"
#ifdef FUSEBENCH_HAVE_CUDA
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/cuda/cuda_device.h"
#endif

namespace fb {

std::shared_ptr<const Backend> backend_named(const std::string& device) {
  if (device == "cpu") {
    static const auto cpu = std::make_shared<const CpuBackend>();
    return cpu;
  }
  if (device == "cuda" || device.rfind("cuda:", 0) == 0) {
#ifdef FUSEBENCH_HAVE_CUDA
    const int index = cuda::device_index(device);
    // One per device: its stream, library handles and workspace are made once.
    static std::mutex mutex;
    static std::map<int, std::shared_ptr<const Backend>> made;
    std::lock_guard<std::mutex> lock(mutex);
    auto& b = made[index];
    if (!b) b = std::make_shared<const cuda::CudaBackend>(index);
    return b;
#else
    throw Error("device '" + device + "': this fusebench was built without the CUDA backend (CMake found no CUDA toolkit)");
#endif
  }
  throw Error("unknown device '" + device + "' (known: cpu, cuda, cuda:N)");
}

}  // namespace fb
