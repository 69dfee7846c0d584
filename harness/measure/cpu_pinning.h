// Optional CPU pinning for the timed phase (scenario "timing": {"pin_cpus": [2, 3]}): keeps
// the scheduler from migrating the executors' threads between cores mid-measurement, which
// costs cold caches and, on big machines, a remote memory node.
#pragma once
#include <sched.h>
#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace fb {

// Pins every thread of this process (the worker pools included, which sched_setaffinity on
// the calling thread alone would miss) to `cpus` for its lifetime, and restores each
// thread's previous mask on destruction. Threads created meanwhile inherit the pinning from
// their creator. fb::Error naming the CPU when one is not online or not allowed.
class CpuPinning {
 public:
  explicit CpuPinning(const std::vector<int>& cpus);
  ~CpuPinning();
  CpuPinning(const CpuPinning&) = delete;
  CpuPinning& operator=(const CpuPinning&) = delete;

  // "2,3": how the pinning is recorded with the case.
  static std::string describe(const std::vector<int>& cpus);

 private:
  void restore() noexcept;
  std::vector<std::pair<pid_t, cpu_set_t>> previous_;
};

}  // namespace fb
