#include "harness/measure/environment.h"

#include "engine/backend/backend.h"
#include "engine/util/build_info.h"
#include "harness/measure/openmp_waits.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>

#include <google/protobuf/stubs/common.h>
#include <oneapi/tbb/version.h>
#include <sqlite3.h>

// ONNX's only version in its headers: a constexpr in ONNX_NAMESPACE (a compile definition
// that the onnx CMake target sets; defaulted here for builds outside CMake).
#if __has_include(<onnx/common/version.h>)
#ifndef ONNX_NAMESPACE
#define ONNX_NAMESPACE onnx
#endif
#include <onnx/common/version.h>
#define FUSEBENCH_HAVE_ONNX_VERSION 1
#endif

namespace fb {

namespace {

// The /proc/cpuinfo flags that decide which kernels can run, in the order reported.
const char* const kKernelFlags[] = {"sse4_2",     "avx",         "avx2",        "fma",      "f16c",
                                    "avx512f",    "avx512bw",    "avx512vl",    "avx512dq", "avx512_bf16",
                                    "avx512_vnni", "avx_vnni",   "amx_tile",    "amx_bf16", "amx_int8",
                                    "avx512_fp16"};

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// The CPU model and the kernel-relevant flags of the first processor in /proc/cpuinfo.
void read_cpuinfo(RunInfo& info) {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model_fallback;
  std::set<std::string> flags;
  bool have_flags = false;
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = trim(line.substr(0, colon));
    std::string value = trim(line.substr(colon + 1));
    if (key == "model name" && info.cpu_model.empty()) {
      info.cpu_model = value;
    } else if ((key == "Model" || key == "Hardware") && model_fallback.empty()) {
      model_fallback = value;  // Arm kernels name the machine here instead
    } else if ((key == "flags" || key == "Features") && !have_flags) {
      std::istringstream words(value);
      for (std::string w; words >> w;) flags.insert(w);
      have_flags = true;
    }
  }
  if (info.cpu_model.empty()) info.cpu_model = model_fallback;
  for (const char* f : kKernelFlags)
    if (flags.count(f)) info.cpu_flags += (info.cpu_flags.empty() ? "" : " ") + std::string(f);
}

std::string compiler_version() {
#if defined(__clang__)
  return "clang++ " + std::to_string(__clang_major__) + "." + std::to_string(__clang_minor__) + "." +
         std::to_string(__clang_patchlevel__);
#elif defined(__GNUC__)
  return "g++ " + std::to_string(__GNUC__) + "." + std::to_string(__GNUC_MINOR__) + "." +
         std::to_string(__GNUC_PATCHLEVEL__);
#elif defined(__VERSION__)
  return __VERSION__;
#else
  return "";
#endif
}

nlohmann::json library_versions() {
  nlohmann::json v = nlohmann::json::object();
  for (const auto& [library, version] : backend_named("cpu")->library_versions()) v[library] = version;
  // The runtime library's version: the one actually loaded, which may differ from the headers.
  if (const char* tbb = TBB_runtime_version()) v["tbb"] = tbb;
  if (const char* sq = sqlite3_libversion()) v["sqlite"] = sq;
  v["openmp waits"] = openmp_waits();  // how oneDNN's threads wait: a busy machine's run stops the spin
#ifdef FUSEBENCH_HAVE_ONNX_VERSION
  v["onnx"] = ONNX_NAMESPACE::LAST_RELEASE_VERSION;  // compile time (headers)
#endif
  // 3021012 -> "3.21.12" (compile time)
  v["protobuf"] = std::to_string(GOOGLE_PROTOBUF_VERSION / 1000000) + "." +
                  std::to_string(GOOGLE_PROTOBUF_VERSION / 1000 % 1000) + "." +
                  std::to_string(GOOGLE_PROTOBUF_VERSION % 1000);
  return v;
}

}  // namespace

std::string utc_now_iso8601() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::array<double, 3> load_average() {
  std::array<double, 3> load{-1, -1, -1};
  double values[3];
  if (getloadavg(values, 3) == 3) load = {values[0], values[1], values[2]};
  return load;
}

HostFingerprint host_fingerprint(const RunInfo& info) {
  return HostFingerprint{info.host, info.cpu_model, info.cpu_flags, info.cores};
}

RunInfo capture_environment() {
  RunInfo info;
  info.started_at = utc_now_iso8601();
  info.git_commit = fusebench_git_commit();
  info.git_dirty = fusebench_git_dirty();
  info.compiler_flags = fusebench_cxx_flags();
  info.fusebench_version = fusebench_version();

  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) info.host = host;

  read_cpuinfo(info);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores > 0) info.cores = static_cast<int>(cores);
  long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0) info.memory_bytes = static_cast<int64_t>(pages) * page_size;

  struct utsname u {};
  if (uname(&u) == 0) info.kernel = std::string(u.sysname) + " " + u.release;

  info.compiler = compiler_version();
  info.library_versions = library_versions();
  return info;
}

}  // namespace fb
