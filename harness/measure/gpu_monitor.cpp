#include "harness/measure/gpu_monitor.h"

#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <limits>
#include <vector>

namespace fb {
namespace {

// NVML's C ABI, declared here for the calls made below (nvml.h is not needed to build):
// nvmlReturn_t and the enums passed by value are C enums, int-sized; nvmlDevice_t is a
// pointer to an opaque struct. Values as in nvml.h.
using NvmlReturn = int;
using NvmlDevice = struct nvmlDevice_st*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlInsufficientSize = 7;
constexpr int kNvmlClockSm = 1, kNvmlClockMem = 2;       // nvmlClockType_t
constexpr int kNvmlTemperatureGpu = 0;                   // nvmlTemperatureSensors_t
constexpr int kNvmlPerfPolicyPower = 0, kNvmlPerfPolicyThermal = 1;  // nvmlPerfPolicyType_t
constexpr int kNvmlFeatureEnabled = 1;                   // nvmlEnableState_t
constexpr unsigned kNvmlMigEnabled = 1;                  // NVML_DEVICE_MIG_ENABLE
constexpr unsigned long long kNvmlValueNotAvailable = std::numeric_limits<unsigned long long>::max();

struct NvmlProcessInfo {  // nvmlProcessInfo_v2_t, what the _v3 process query fills
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id, compute_instance_id;
};

struct NvmlViolationTime {  // nvmlViolationTime_t
  unsigned long long reference_time_us;
  unsigned long long violation_time_ns;
};

}  // namespace

struct GpuMonitor::Nvml {
  void* library = nullptr;
  bool initialized = false;
  NvmlDevice device = nullptr;

  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*handle_by_uuid)(const char*, NvmlDevice*) = nullptr;
  // Each of these may be missing from an older library: its figure is then unknown.
  const char* (*error_string)(NvmlReturn) = nullptr;
  NvmlReturn (*name)(NvmlDevice, char*, unsigned) = nullptr;
  NvmlReturn (*driver_version)(char*, unsigned) = nullptr;
  NvmlReturn (*cuda_driver_version)(int*) = nullptr;
  NvmlReturn (*clock)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*max_clock)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*power)(NvmlDevice, unsigned*) = nullptr;
  NvmlReturn (*power_limit)(NvmlDevice, unsigned*) = nullptr;
  NvmlReturn (*temperature)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*ecc)(NvmlDevice, int*, int*) = nullptr;
  NvmlReturn (*persistence)(NvmlDevice, int*) = nullptr;
  NvmlReturn (*mig)(NvmlDevice, unsigned*, unsigned*) = nullptr;
  NvmlReturn (*processes)(NvmlDevice, unsigned*, NvmlProcessInfo*) = nullptr;
  NvmlReturn (*clock_events)(NvmlDevice, unsigned long long*) = nullptr;
  NvmlReturn (*violation)(NvmlDevice, int, NvmlViolationTime*) = nullptr;

  template <class F>
  bool bind(F& f, const char* symbol) {
    f = reinterpret_cast<F>(dlsym(library, symbol));
    return f != nullptr;
  }
  std::string error(NvmlReturn rc) const {
    const char* s = error_string ? error_string(rc) : nullptr;
    return s ? s : "NVML error " + std::to_string(rc);
  }
};

GpuMonitor::GpuMonitor(const DeviceDescription& device, const std::string& library)
    : device_(device), nvml_(std::make_unique<Nvml>()) {
  Nvml& n = *nvml_;
  dlerror();
  n.library = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!n.library) {
    const char* why = dlerror();
    not_read_ = why ? why : library + " could not be loaded";
    return;
  }
  for (auto [bound, symbol] : {std::pair{n.bind(n.init, "nvmlInit_v2"), "nvmlInit_v2"},
                               {n.bind(n.shutdown, "nvmlShutdown"), "nvmlShutdown"},
                               {n.bind(n.handle_by_uuid, "nvmlDeviceGetHandleByUUID"), "nvmlDeviceGetHandleByUUID"}})
    if (!bound) {
      not_read_ = library + " has no " + symbol;
      return;
    }
  n.bind(n.error_string, "nvmlErrorString");
  n.bind(n.name, "nvmlDeviceGetName");
  n.bind(n.driver_version, "nvmlSystemGetDriverVersion");
  n.bind(n.cuda_driver_version, "nvmlSystemGetCudaDriverVersion_v2");
  n.bind(n.clock, "nvmlDeviceGetClockInfo");
  n.bind(n.max_clock, "nvmlDeviceGetMaxClockInfo");
  n.bind(n.power, "nvmlDeviceGetPowerUsage");
  n.bind(n.power_limit, "nvmlDeviceGetEnforcedPowerLimit");
  n.bind(n.temperature, "nvmlDeviceGetTemperature");
  n.bind(n.ecc, "nvmlDeviceGetEccMode");
  n.bind(n.persistence, "nvmlDeviceGetPersistenceMode");
  n.bind(n.mig, "nvmlDeviceGetMigMode");
  n.bind(n.processes, "nvmlDeviceGetComputeRunningProcesses_v3");
  // Renamed in NVML 12.2; drivers before it have the throttle name only.
  if (!n.bind(n.clock_events, "nvmlDeviceGetCurrentClocksEventReasons"))
    n.bind(n.clock_events, "nvmlDeviceGetCurrentClocksThrottleReasons");
  n.bind(n.violation, "nvmlDeviceGetViolationStatus");

  if (const NvmlReturn rc = n.init(); rc != kNvmlSuccess) {
    not_read_ = "nvmlInit_v2: " + n.error(rc);
    return;
  }
  n.initialized = true;
  if (device.uuid.empty()) {
    not_read_ = "the backend gave no GPU UUID to find the device by";
    return;
  }
  if (const NvmlReturn rc = n.handle_by_uuid(device.uuid.c_str(), &n.device); rc != kNvmlSuccess)
    not_read_ = "NVML finds no GPU " + device.uuid + ": " + n.error(rc);
}

GpuMonitor::~GpuMonitor() {
  // The library stays loaded: dlopen of a loaded library only counts a reference, and
  // NVML keeps its own state across nvmlInit/nvmlShutdown pairs.
  if (nvml_->initialized) nvml_->shutdown();
}

GpuSetup GpuMonitor::setup() const {
  GpuSetup s{.name = device_.name,
             .uuid = device_.uuid,
             .cuda_runtime = device_.runtime,
             .cublas = device_.cublas,
             .cudnn = device_.cudnn};
  if (!not_read_.empty()) return s;
  const Nvml& n = *nvml_;
  char text[256] = {};
  unsigned u = 0;
  int state = 0, pending = 0;
  if (n.name && n.name(n.device, text, sizeof text) == kNvmlSuccess) s.name = text;
  if (n.driver_version && n.driver_version(text, sizeof text) == kNvmlSuccess) s.driver = text;
  if (int v = 0; n.cuda_driver_version && n.cuda_driver_version(&v) == kNvmlSuccess)
    s.cuda_driver = std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);  // 13000 = 13.0
  if (n.power_limit && n.power_limit(n.device, &u) == kNvmlSuccess) s.power_limit_w = u / 1000.0;  // mW
  if (n.max_clock && n.max_clock(n.device, kNvmlClockSm, &u) == kNvmlSuccess) s.max_sm_mhz = u;
  if (n.ecc && n.ecc(n.device, &state, &pending) == kNvmlSuccess) s.ecc = state == kNvmlFeatureEnabled;
  if (n.persistence && n.persistence(n.device, &state) == kNvmlSuccess) s.persistence = state == kNvmlFeatureEnabled;
  if (unsigned mode = 0, next = 0; n.mig && n.mig(n.device, &mode, &next) == kNvmlSuccess) s.mig = mode == kNvmlMigEnabled;
  return s;
}

double GpuMonitor::sm_clock_mhz() const {
  const Nvml& n = *nvml_;
  unsigned mhz = 0;
  if (!not_read_.empty() || !n.clock || n.clock(n.device, kNvmlClockSm, &mhz) != kNvmlSuccess)
    return std::numeric_limits<double>::quiet_NaN();
  return mhz;
}

GpuReading GpuMonitor::read() const {
  GpuReading r;
  r.own_pid = getpid();
  if (!not_read_.empty()) return r;
  const Nvml& n = *nvml_;
  unsigned u = 0;
  r.sm_mhz = sm_clock_mhz();
  if (n.clock && n.clock(n.device, kNvmlClockMem, &u) == kNvmlSuccess) r.memory_mhz = u;
  if (n.power && n.power(n.device, &u) == kNvmlSuccess) r.power_w = u / 1000.0;  // mW
  if (n.temperature && n.temperature(n.device, kNvmlTemperatureGpu, &u) == kNvmlSuccess) r.temperature_c = u;
  if (unsigned long long bits = 0; n.clock_events && n.clock_events(n.device, &bits) == kNvmlSuccess)
    r.clock_event_reasons = bits;
  NvmlViolationTime v{};
  if (n.violation && n.violation(n.device, kNvmlPerfPolicyPower, &v) == kNvmlSuccess)
    r.power_violation_ms = static_cast<double>(v.violation_time_ns) / 1e6;
  if (n.violation && n.violation(n.device, kNvmlPerfPolicyThermal, &v) == kNvmlSuccess)
    r.thermal_violation_ms = static_cast<double>(v.violation_time_ns) / 1e6;
  if (n.processes) {
    // The list can grow between asking its size and reading it: ask again, a few times.
    std::vector<NvmlProcessInfo> infos(8);
    for (int attempt = 0; attempt < 3; ++attempt) {
      unsigned count = static_cast<unsigned>(infos.size());
      const NvmlReturn rc = n.processes(n.device, &count, infos.data());
      if (rc == kNvmlInsufficientSize) {
        infos.resize(count + 8);
        continue;
      }
      if (rc != kNvmlSuccess) break;
      r.compute_processes.emplace();
      for (unsigned i = 0; i < count; ++i)
        r.compute_processes->push_back(
            {infos[i].pid, infos[i].used_gpu_memory == kNvmlValueNotAvailable ? -1
                                                                               : static_cast<int64_t>(infos[i].used_gpu_memory)});
      break;
    }
  }
  return r;
}

void watch_gpu(const GpuMonitor& monitor, GpuEnvironment& env, DeviceClocks& clocks) {
  env.not_read = monitor.not_read();
  env.setup = monitor.setup();
  if (!env.not_read.empty()) return;  // no clock to wait for, nothing to read
  using Clock = std::chrono::steady_clock;
  auto began = std::make_shared<Clock::time_point>();
  clocks.sm_clock_mhz = [&monitor] { return monitor.sm_clock_mhz(); };
  clocks.timed_phase_begins = [&monitor, &env, began] {
    env.before = monitor.read();
    *began = Clock::now();
  };
  clocks.timed_phase_ends = [&monitor, &env, began] {
    env.timed_ms = std::chrono::duration<double, std::milli>(Clock::now() - *began).count();
    env.after = monitor.read();
  };
}

}  // namespace fb
