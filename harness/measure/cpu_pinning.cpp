#include "harness/measure/cpu_pinning.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "engine/ir/error.h"

namespace fb {

std::string CpuPinning::describe(const std::vector<int>& cpus) {
  std::string s;
  for (int c : cpus) s += (s.empty() ? "" : ",") + std::to_string(c);
  return s;
}

CpuPinning::CpuPinning(const std::vector<int>& cpus) {
  if (cpus.empty()) return;
  cpu_set_t want;
  CPU_ZERO(&want);
  for (int c : cpus) {
    if (c < 0 || c >= CPU_SETSIZE) throw Error("timing.pin_cpus: CPU " + std::to_string(c) + " is out of range");
    CPU_SET(c, &want);
  }
  // Every thread of the process: /proc/self/task lists them by thread id.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    const pid_t tid = static_cast<pid_t>(std::stol(entry.path().filename().string()));
    cpu_set_t old;
    if (sched_getaffinity(tid, sizeof old, &old) != 0) continue;  // the thread just exited
    if (sched_setaffinity(tid, sizeof want, &want) != 0) {
      const int err = errno;
      restore();  // put back the threads already pinned
      throw Error("timing.pin_cpus: cannot pin to CPUs " + describe(cpus) + ": " + std::strerror(err) +
                  " (are they online and allowed for this process?)");
    }
    previous_.emplace_back(tid, old);
  }
  if (ec) {
    restore();
    throw Error("timing.pin_cpus: cannot list this process's threads: " + ec.message());
  }
}

CpuPinning::~CpuPinning() { restore(); }

void CpuPinning::restore() noexcept {
  for (auto& [tid, mask] : previous_) sched_setaffinity(tid, sizeof mask, &mask);  // best effort: a thread may be gone
  previous_.clear();
}

}  // namespace fb
