// What a GPU case's environment (harness/cases/gpu_environment.h) says of its timing: whether
// the GPU disturbed it (the case is then flagged `disturbed`, as a busy CPU flags it, and
// compare says `environment`), which of several worker processes' readings a merged case
// keeps, and how two runs' GPU setups differ (compare puts such a case on the machine).
#pragma once
#include <string>
#include <vector>

#include "harness/cases/case.h"

namespace fb {

// A GPU clock that fell by more than this fraction over the timed phase disturbed it.
constexpr double kGpuClockDropFraction = 0.05;

// Why the GPU disturbed the timing, or "" when it did not (or nothing was read): power or
// thermal violation time grew during the timed phase; the clock-event reasons at its end
// name a power cap, a thermal or a hardware slowdown; the SM clock after is more than
// kGpuClockDropFraction below the one before; or another process had a compute context on
// the GPU. Names the figures: "GPU throttled: power cap for 12 ms of 2.1 s, SM clock
// 1980→1755 MHz", "GPU shared with 1 other compute process (pid 4242, 1.5 GiB)".
std::string gpu_disturbance_of(const GpuEnvironment& g);

// Joins a CPU and a GPU reason into the case's `disturbed` ("" stays out).
std::string join_disturbances(const std::string& cpu, const std::string& gpu);

// A case timed in several worker processes keeps the GPU readings that show the worst:
// the setup of the first process, and the readings (with their settling) of the process
// the rule above flags, else of the one whose SM clock ended lowest; `process` names it.
// Unset where no part has them.
std::optional<GpuEnvironment> merge_gpu_environments(const std::vector<CaseResult>& parts);

// How the candidate's GPU setup differs from the baseline's, where both say: "driver
// 580.159.04→580.172.08", "power limit 700→600 W", "GPU GPU-8c6f...→GPU-1d2e...", "ECC
// on→off", "persistence", "MIG", "max SM clock". Empty when they agree.
std::vector<std::string> gpu_setup_differences(const GpuSetup& baseline, const GpuSetup& candidate);

}  // namespace fb
