// Reads a GPU's setup and state through NVML, the library nvidia-smi reads them with. NVML
// is loaded at run time (dlopen of libnvidia-ml.so.1, which the driver installs), never
// linked, so a build needs no NVML and a machine without it still runs GPU cases: their
// figures are then unknown and the record says why ("GPU state not read: ...").
#pragma once
#include <memory>
#include <string>

#include "engine/backend/backend.h"
#include "harness/cases/gpu_environment.h"
#include "harness/measure/timer.h"

namespace fb {

inline constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";

class GpuMonitor {
 public:
  // Loads `library` and finds the GPU by device.uuid. Never throws: what failed (no
  // library, a missing entry point, no driver, no such GPU) is in not_read().
  explicit GpuMonitor(const DeviceDescription& device, const std::string& library = kNvmlLibrary);
  ~GpuMonitor();
  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;

  const std::string& not_read() const { return not_read_; }
  // What the GPU is and how it is set up; the backend's names and versions where NVML
  // cannot say. Each figure NVML refuses (not supported, no permission) stays unknown.
  GpuSetup setup() const;
  // Its state now, our pid included.
  GpuReading read() const;
  // The SM clock now in MHz, NaN when unknown: cheap enough to ask while warming up.
  double sm_clock_mhz() const;

 private:
  struct Nvml;
  DeviceDescription device_;
  std::unique_ptr<Nvml> nvml_;
  std::string not_read_;
};

// A device case's GPU environment, filled while it is timed: `clocks` gets the SM clock
// (warm-up waits for it to settle) and the calls around the timed phase, which read
// `monitor` into `env` (before, after and the time between). Both must outlive the timing.
void watch_gpu(const GpuMonitor& monitor, GpuEnvironment& env, DeviceClocks& clocks);

}  // namespace fb
