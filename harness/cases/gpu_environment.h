// The GPU's side of a device case's environment, as Interference is the CPU's: what the
// GPU is and how it is set up (read once), and its state read just before and just after
// the timed phase, through NVML (harness/measure/gpu_monitor.h). A figure NVML did not give is
// NaN or unset; `not_read` says why none was read. harness/measure/gpu_disturbance.h judges it.
#pragma once
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fb {

// NVML's clock-event reasons (nvmlClocksEventReason*): why the clocks are held down. Only
// the bits that mean the GPU slowed itself are named; idle, application clocks and sync
// boost are settings, not a disturbance.
namespace gpu_clock_event {
constexpr uint64_t kSwPowerCap = 0x4;
constexpr uint64_t kHwSlowdown = 0x8;
constexpr uint64_t kSwThermalSlowdown = 0x20;
constexpr uint64_t kHwThermalSlowdown = 0x40;
constexpr uint64_t kHwPowerBrakeSlowdown = 0x80;
}  // namespace gpu_clock_event

// A process with a compute context on the GPU.
struct GpuProcess {
  int64_t pid = 0;
  int64_t used_bytes = -1;  // its GPU memory; -1 where NVML does not say
  bool operator==(const GpuProcess&) const = default;
};

// What the GPU is and how it is set up: the same before and after a case, and what two
// runs of a case must share for their times to be compared as the code's.
struct GpuSetup {
  std::string name{};         // "NVIDIA H200"
  std::string uuid{};         // "GPU-8c6f...": this board, whatever its index
  std::string driver{};       // "580.159.04"
  std::string cuda_driver{};  // the CUDA version the driver supports: "13.0"
  std::string cuda_runtime{}, cublas{}, cudnn{};  // the libraries the backend loaded
  double power_limit_w = std::numeric_limits<double>::quiet_NaN();  // the enforced limit
  double max_sm_mhz = std::numeric_limits<double>::quiet_NaN();
  std::optional<bool> ecc{}, persistence{}, mig{};  // the current modes; unset: not reported
};

// The GPU's state at one moment.
struct GpuReading {
  double sm_mhz = std::numeric_limits<double>::quiet_NaN();
  double memory_mhz = std::numeric_limits<double>::quiet_NaN();
  double power_w = std::numeric_limits<double>::quiet_NaN();
  double temperature_c = std::numeric_limits<double>::quiet_NaN();
  std::optional<uint64_t> clock_event_reasons;  // gpu_clock_event bits now
  // How long power and thermal limits have held the clocks below the application clocks,
  // cumulative since the driver loaded (NVML's violation status), in ms.
  double power_violation_ms = std::numeric_limits<double>::quiet_NaN();
  double thermal_violation_ms = std::numeric_limits<double>::quiet_NaN();
  // Every process with a compute context on the GPU, ours included; unset: not reported.
  std::optional<std::vector<GpuProcess>> compute_processes;
  int64_t own_pid = 0;  // ours, as getpid() says
};

struct GpuEnvironment {
  std::string not_read;  // why NVML could not be read ("" when it was)
  GpuSetup setup;
  GpuReading before, after;  // around the timed phase
  double timed_ms = std::numeric_limits<double>::quiet_NaN();  // between the two readings
  // Warm-up beyond the configured one, until two SM clock reads 50 ms apart agreed within
  // 1% (harness/measure/timer.h): how long it took and the clock read last; `settled` false when
  // the cap ended it first. NaN: not tried (the clock could not be read).
  double settle_ms = std::numeric_limits<double>::quiet_NaN();
  double settled_sm_mhz = std::numeric_limits<double>::quiet_NaN();
  bool settled = false;
  int process = 0;  // the worker process the readings are from (merged: the worst one)
};

// Equal field by field, two NaNs (unknown) counting as equal.
bool operator==(const GpuSetup& a, const GpuSetup& b);
bool operator==(const GpuReading& a, const GpuReading& b);
bool operator==(const GpuEnvironment& a, const GpuEnvironment& b);

// The JSON form (stored in the cases table's gpu_json, and carried between processes):
// NaN as null, unset as null. Reading a damaged document is an fb::Error naming the field.
void to_json(nlohmann::json& j, const GpuEnvironment& g);
void from_json(const nlohmann::json& j, GpuEnvironment& g);

// The processes in `r` other than ours. Where our pid is not among those NVML lists (a
// container: NVML gives the host's pids) one of them is ours, but which is unknown: then
// `unidentified` is true and `count` leaves one out.
struct OtherGpuProcesses {
  int count = 0;
  std::vector<GpuProcess> listed;  // every one that is not ours (or all, when unidentified)
  bool unidentified = false;
};
OtherGpuProcesses other_gpu_processes(const GpuReading& r);

// One line of what was read, for `run` and `compare`: "NVIDIA H200: SM 1980→1975 MHz
// (settled after 0.41 s), memory 2619 MHz, 310→455 W of 700 W, 41→56 °C", or "GPU state
// not read: <why>".
std::string gpu_summary(const GpuEnvironment& g);
// The setup in one line, as the report's environment table shows it: "NVIDIA H200
// GPU-771b…, driver 580.159.04 (CUDA 13.0), runtime 13.0, cuBLAS 13.1.0, cuDNN 9.14.0,
// 700 W limit, ECC on, persistence off, MIG off" (unknown parts left out).
std::string gpu_setup_text(const GpuSetup& s);

}  // namespace fb
