#include "engine/backend/backend.h"

#include <map>
#include <mutex>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/cpu_kernels.h"
#ifdef FUSEBENCH_HAVE_CUDA
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/cuda/cuda_device.h"
#endif

namespace fb {

bool is_device_name(const std::string& device) {
  return device == "cpu" || device == "cuda" ||
         (device.rfind("cuda:", 0) == 0 && device.size() > 5 && device.size() < 9 &&
          device.find_first_not_of("0123456789", 5) == std::string::npos);
}

int cuda_device_index(const std::string& device) {
  if (!is_device_name(device) || device == "cpu") throw Error("unknown device '" + device + "' (known: cpu, cuda, cuda:N)");
  return device == "cuda" ? 0 : std::stoi(device.substr(5));
}

int cuda_device_count() {
#ifdef FUSEBENCH_HAVE_CUDA
  return cuda::device_count();
#else
  return 0;
#endif
}

void bind_host_kernels() { bind_cpu_kernels(); }

std::shared_ptr<const Backend> backend_named(const std::string& device) {
  if (device == "cpu") {
    static const auto cpu = std::make_shared<const CpuBackend>();
    return cpu;
  }
  if (is_device_name(device)) {
    const int index = cuda_device_index(device);
#ifdef FUSEBENCH_HAVE_CUDA
    // One per device: its stream, library handles and workspace are made once.
    static std::mutex mutex;
    static std::map<int, std::shared_ptr<const Backend>> made;
    std::lock_guard<std::mutex> lock(mutex);
    auto& b = made[index];
    if (!b) b = std::make_shared<const cuda::CudaBackend>(index);
    return b;
#else
    (void)index;
    throw Error("device '" + device + "': this fusebench was built without the CUDA backend (CMake found no CUDA toolkit)");
#endif
  }
  throw Error("unknown device '" + device + "' (known: cpu, cuda, cuda:N)");
}

}  // namespace fb
