// What a CUDA device is (the device string, "cuda" or "cuda:N", is backend.h's). Probing names what was found when no device can be used (no driver, no
// device, a device index past the last, a busy or prohibited device), so a case asking
// for a GPU on a machine without one fails with that sentence, never a crash.
#pragma once
#include <string>

namespace fb::cuda {

struct DeviceProperties {
  int index = 0;
  std::string name;          // "NVIDIA H200"
  int cc_major = 0, cc_minor = 0;  // compute capability
  std::string uuid;          // "GPU-8c6f...": the device, whatever its index on this host
  size_t memory_bytes = 0;
  int multiprocessors = 0;
  int driver_version = 0, runtime_version = 0;  // 13000 = 13.0
};

// The device's properties, after checking it can run work (a context is made on it);
// Error saying what was found otherwise.
DeviceProperties probe_device(int index);
// How many CUDA devices this process sees (0 where the driver finds none or is missing).
int device_count();

}  // namespace fb::cuda
