// The GPU's environment of a device case: the rule that flags a case the GPU disturbed
// (each reason, at its exact threshold), the record's JSON and store round trips, the
// merge of worker processes' readings, compare's verdict on a throttled case and on a
// changed GPU setup, warm-up until the SM clock settles, and NVML loaded at run time (a
// missing library or entry point is "not read", never a crash; the live read skips
// without a GPU).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <cmath>
#include <filesystem>
#include <limits>

#include "engine/backend/backend.h"
#include "harness/cases/case_json.h"
#include "harness/judge/compare.h"
#include "harness/measure/environment.h"
#include "harness/measure/gpu_disturbance.h"
#include "harness/measure/gpu_monitor.h"
#include "harness/measure/process_merge.h"
#include "harness/measure/timer.h"
#include "harness/store/result_store.h"

namespace fb {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t kOwnPid = 1000;

// A quiet H200-like reading: nothing throttled, only our own process on the GPU.
GpuReading quiet() {
  return {.sm_mhz = 1980,
          .memory_mhz = 2619,
          .power_w = 310,
          .temperature_c = 41,
          .clock_event_reasons = 0,
          .power_violation_ms = 5000,
          .thermal_violation_ms = 200,
          .compute_processes = std::vector<GpuProcess>{{kOwnPid, 1 << 30}},
          .own_pid = kOwnPid};
}

GpuEnvironment quiet_environment() {
  GpuEnvironment g;
  g.setup.name = "NVIDIA H200";
  g.setup.uuid = "GPU-8c6f0a52-1111-2222-3333-444455556666";
  g.setup.driver = "580.159.04";
  g.setup.cuda_driver = "13.0";
  g.setup.cuda_runtime = "13.0";
  g.setup.cublas = "13.1.0";
  g.setup.cudnn = "9.19.0";
  g.setup.power_limit_w = 700;
  g.setup.max_sm_mhz = 1980;
  g.setup.ecc = true;
  g.setup.persistence = true;
  g.setup.mig = false;
  g.before = quiet();
  g.after = quiet();
  g.after.power_w = 455;
  g.after.temperature_c = 56;
  g.timed_ms = 2100;
  g.settle_ms = 412.5;
  g.settled_sm_mhz = 1980;
  g.settled = true;
  return g;
}

// The report's environment row for a GPU: every known part, unknown ones left out.
TEST(GpuSetupText, NamesEveryKnownPartOfTheSetup) {
  GpuSetup s;
  s.name = "NVIDIA H200";
  s.uuid = "GPU-771be303";
  s.driver = "580.159.04";
  s.cuda_driver = "13.0";
  s.cublas = "13.1.0";
  s.power_limit_w = 700;
  s.ecc = true;
  s.mig = false;
  EXPECT_EQ(gpu_setup_text(s),
            "NVIDIA H200 GPU-771be303, driver 580.159.04 (CUDA 13.0), cuBLAS 13.1.0, 700 W limit, ECC on, MIG off");
  EXPECT_EQ(gpu_setup_text(GpuSetup{}), "GPU");
}

TEST(GpuDisturbance, AQuietGpuIsNoReason) {
  EXPECT_EQ(gpu_disturbance_of(quiet_environment()), "");
  // Nothing read, or nothing known: nothing to flag.
  GpuEnvironment unread;
  unread.not_read = "libnvidia-ml.so.1: cannot open shared object file";
  EXPECT_EQ(gpu_disturbance_of(unread), "");
  EXPECT_EQ(gpu_disturbance_of(GpuEnvironment{}), "");
}

TEST(GpuDisturbance, PowerOrThermalViolationTimeThatGrewDuringTheTimedPhase) {
  GpuEnvironment g = quiet_environment();
  g.after.power_violation_ms = g.before.power_violation_ms + 12;
  g.after.sm_mhz = 1755;
  EXPECT_EQ(gpu_disturbance_of(g), "GPU throttled: power cap for 12 ms of 2.1 s, SM clock 1980→1755 MHz (-11.4%)");
  g = quiet_environment();
  g.after.thermal_violation_ms = g.before.thermal_violation_ms + 0.25;
  g.after.sm_mhz = 1965;  // under 5% lower: named beside the reason, not a reason itself
  EXPECT_EQ(gpu_disturbance_of(g), "GPU throttled: thermal limit for 0.25 ms of 2.1 s, SM clock 1980→1965 MHz");
  // Counters that did not move (or are unknown) say nothing.
  g = quiet_environment();
  g.before.power_violation_ms = g.after.power_violation_ms = kNaN;
  EXPECT_EQ(gpu_disturbance_of(g), "");
}

TEST(GpuDisturbance, ClockEventReasonsThatMeanTheGpuSlowedItself) {
  namespace e = gpu_clock_event;
  const std::pair<uint64_t, std::string> named[] = {{e::kSwPowerCap, "SW power cap"},
                                                    {e::kHwSlowdown, "HW slowdown"},
                                                    {e::kSwThermalSlowdown, "SW thermal slowdown"},
                                                    {e::kHwThermalSlowdown, "HW thermal slowdown"},
                                                    {e::kHwPowerBrakeSlowdown, "HW power brake"}};
  for (const auto& [bit, name] : named) {
    GpuEnvironment g = quiet_environment();
    g.after.clock_event_reasons = bit;
    EXPECT_EQ(gpu_disturbance_of(g), "GPU throttled: clock events at the end: " + name + ", SM clock 1980 MHz");
  }
  // Idle (0x1), application clocks (0x2), sync boost (0x10), display (0x100): settings, not throttling.
  GpuEnvironment g = quiet_environment();
  g.after.clock_event_reasons = 0x1 | 0x2 | 0x10 | 0x100;
  EXPECT_EQ(gpu_disturbance_of(g), "");
  // Only the reasons at the end count: one that had passed by then did not hold the clock down.
  g.before.clock_event_reasons = e::kSwPowerCap;
  EXPECT_EQ(gpu_disturbance_of(g), "");
}

TEST(GpuDisturbance, AnSmClockMoreThanFivePercentLowerAfter) {
  GpuEnvironment g = quiet_environment();
  g.before.sm_mhz = 2000;
  g.after.sm_mhz = 1900;  // exactly 5% lower: not more than 5%
  EXPECT_EQ(gpu_disturbance_of(g), "");
  g.after.sm_mhz = 1899.9;
  EXPECT_EQ(gpu_disturbance_of(g), "GPU throttled: SM clock 2000→1900 MHz (-5.0%)");
  g.after.sm_mhz = 1800;
  EXPECT_EQ(gpu_disturbance_of(g), "GPU throttled: SM clock 2000→1800 MHz (-10.0%)");
  g.after.sm_mhz = 2100;  // a clock that rose disturbed nothing
  EXPECT_EQ(gpu_disturbance_of(g), "");
}

TEST(GpuDisturbance, AnotherComputeProcessOnTheGpu) {
  GpuEnvironment g = quiet_environment();
  g.after.compute_processes->push_back({4242, int64_t(3) << 29});
  EXPECT_EQ(gpu_disturbance_of(g), "GPU shared with 1 other compute process (pid 4242, 1.5 GiB)");
  // Seen in either reading, each named once.
  g.before.compute_processes->push_back({4242, int64_t(3) << 29});
  g.before.compute_processes->push_back({77, -1});
  EXPECT_EQ(gpu_disturbance_of(g), "GPU shared with 2 other compute processes (pid 77; pid 4242, 1.5 GiB)");
  // Throttled and shared: both reasons.
  g.after.power_violation_ms += 3;
  EXPECT_EQ(gpu_disturbance_of(g),
            "GPU throttled: power cap for 3 ms of 2.1 s, SM clock 1980 MHz; GPU shared with 2 other compute "
            "processes (pid 77; pid 4242, 1.5 GiB)");
}

TEST(GpuDisturbance, PidsOfAnotherNamespaceCountAllButOne) {
  GpuEnvironment g = quiet_environment();
  // In a container NVML lists the host's pids: ours is one of them, which one is unknown.
  g.before.compute_processes = g.after.compute_processes = std::vector<GpuProcess>{{31337, -1}};
  EXPECT_EQ(gpu_disturbance_of(g), "");
  g.after.compute_processes->push_back({31338, -1});
  const OtherGpuProcesses o = other_gpu_processes(g.after);
  EXPECT_TRUE(o.unidentified);
  EXPECT_EQ(o.count, 1);
  EXPECT_EQ(gpu_disturbance_of(g),
            "GPU shared with 1 other compute process (NVML lists pid 31337; pid 31338; ours is not among those pids, "
            "so one of them is ours: another PID namespace)");
}

TEST(GpuDisturbance, JoinsTheCpusReason) {
  EXPECT_EQ(join_disturbances("", ""), "");
  EXPECT_EQ(join_disturbances("other processes took 1.00 CPUs", ""), "other processes took 1.00 CPUs");
  EXPECT_EQ(join_disturbances("", "GPU throttled: x"), "GPU throttled: x");
  EXPECT_EQ(join_disturbances("a", "b"), "a; b");
}

TEST(GpuEnvironmentJson, RoundTripsUnknownsAndRefusesDamage) {
  GpuEnvironment g = quiet_environment();
  g.after.clock_event_reasons = gpu_clock_event::kSwPowerCap | (uint64_t(1) << 40);
  g.setup.mig.reset();
  g.before.power_w = kNaN;
  g.after.compute_processes.reset();
  g.process = 3;
  EXPECT_EQ(nlohmann::json::parse(nlohmann::json(g).dump()).get<GpuEnvironment>(), g);
  const GpuEnvironment unread{"no library", {}, {}, {}, kNaN, kNaN, kNaN, false, 0};
  EXPECT_EQ(nlohmann::json::parse(nlohmann::json(unread).dump()).get<GpuEnvironment>(), unread);

  nlohmann::json bad = g;
  bad["after"]["sm_mhz"] = "fast";
  try {
    bad.get<GpuEnvironment>();
    FAIL() << "a damaged record was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("field 'gpu.after.sm_mhz' must be a number"), std::string::npos) << e.what();
  }
  // A case result carries it between processes.
  CaseResult r;
  r.process_noise = {1, 0, 0, 0};
  r.gpu = g;
  EXPECT_EQ(case_result_from_json(nlohmann::json::parse(case_result_to_json(r).dump())), r);
  r.gpu.reset();
  EXPECT_EQ(case_result_from_json(nlohmann::json::parse(case_result_to_json(r).dump())), r);
}

// ---- the store ----

class GpuEnvironmentStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() / ("fusebench_gpu_env_" + std::to_string(getpid()) + ".db")).string();
    std::filesystem::remove(path_);
  }
  void TearDown() override {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path_ + suffix);
  }
  std::string path_;
};

TEST_F(GpuEnvironmentStoreTest, AGpuCaseReadsBackEqualAndACpuCaseWithout) {
  CaseResult gpu_case;
  gpu_case.spec.model = "zoo:mlp";
  gpu_case.spec.device = "cuda";
  gpu_case.stop_reason = "converged";
  gpu_case.gpu = quiet_environment();
  gpu_case.gpu->after.clock_event_reasons = gpu_clock_event::kHwSlowdown;
  gpu_case.gpu->setup.ecc.reset();
  gpu_case.gpu->after.compute_processes->push_back({4242, -1});
  gpu_case.disturbed = gpu_disturbance_of(*gpu_case.gpu);
  CaseResult cpu_case = gpu_case;
  cpu_case.spec.device = "cpu";
  cpu_case.gpu.reset();
  cpu_case.disturbed.clear();
  int64_t run = 0;
  {
    ResultStore store(path_);
    EXPECT_GE(store.schema_version(), 10);  // the version that added the GPU environment, or later
    run = store.begin_run(capture_environment());
    store.write_case(run, gpu_case);
    store.write_case(run, cpu_case);
    store.finish_run(run);
  }
  const ResultStore store(path_);
  for (CaseDetail detail : {CaseDetail::kAll, CaseDetail::kTiming, CaseDetail::kSummary}) {
    const std::vector<StoredCase> cases = store.load_cases(run, detail);
    ASSERT_EQ(cases.size(), 2u);
    ASSERT_TRUE(cases[0].result.gpu.has_value());
    EXPECT_EQ(*cases[0].result.gpu, *gpu_case.gpu);
    EXPECT_EQ(cases[0].result.disturbed, gpu_case.disturbed);
    EXPECT_FALSE(cases[1].result.gpu.has_value());
  }
}

// ---- worker processes ----

CaseResult part_with(const GpuEnvironment& g, double engine_ms) {
  CaseResult r;
  r.stop_reason = "converged";
  for (int i = 0; i < 20; ++i) {
    r.engine.samples_ms.push_back(engine_ms * (1 + 0.001 * i));
    r.reference.samples_ms.push_back(2 * engine_ms * (1 + 0.001 * i));
  }
  r.gpu = g;
  r.disturbed = gpu_disturbance_of(g);
  return r;
}

TEST(GpuProcessMerge, KeepsTheFirstSetupAndTheWorstProcesssReadings) {
  GpuEnvironment calm = quiet_environment(), slower = quiet_environment(), throttled = quiet_environment();
  slower.after.sm_mhz = 1950;  // lower, not flagged
  slower.setup.driver = "a later process cannot change the setup";
  throttled.after.sm_mhz = 1965;
  throttled.after.clock_event_reasons = gpu_clock_event::kSwThermalSlowdown;
  // Flagged beats lower.
  CaseResult merged = merge_process_results({part_with(calm, 1), part_with(slower, 1), part_with(throttled, 1)});
  ASSERT_TRUE(merged.gpu.has_value());
  EXPECT_EQ(merged.gpu->process, 2);
  EXPECT_EQ(merged.gpu->after, throttled.after);
  EXPECT_EQ(merged.gpu->setup, calm.setup);
  EXPECT_NE(merged.disturbed.find("process 3: GPU throttled: clock events at the end: SW thermal slowdown"),
            std::string::npos)
      << merged.disturbed;
  // None flagged: the lowest SM clock at the end.
  merged = merge_process_results({part_with(calm, 1), part_with(slower, 1), part_with(calm, 1)});
  EXPECT_EQ(merged.gpu->process, 1);
  EXPECT_EQ(merged.gpu->after.sm_mhz, 1950);
  EXPECT_EQ(merged.disturbed, "");
  // A process that could not read NVML says so in the merged record.
  GpuEnvironment unread;
  unread.not_read = "NVML finds no GPU GPU-x";
  merged = merge_process_results({part_with(calm, 1), part_with(unread, 1)});
  EXPECT_EQ(merged.gpu->not_read, "NVML finds no GPU GPU-x");
  // CPU cases have none.
  CaseResult cpu = part_with(calm, 1);
  cpu.gpu.reset();
  EXPECT_FALSE(merge_process_results({cpu, cpu}).gpu.has_value());
}

// ---- compare ----

// A GPU case of 5 processes at the same times in both runs.
CaseResult timed_case(const GpuEnvironment& g) {
  std::vector<CaseResult> parts;
  for (int p = 0; p < 5; ++p) parts.push_back(part_with(g, 1 + 0.002 * p));
  CaseResult r = merge_process_results(parts);
  r.spec.device = "cuda";
  return r;
}

TEST(GpuCompare, AThrottledCandidateIsTheEnvironment) {
  const CompareOptions o;
  const CaseResult base = timed_case(quiet_environment());
  ASSERT_NE(judge_case(base, timed_case(quiet_environment()), nullptr, true, o).verdict, Verdict::kEnvironment);
  GpuEnvironment hot = quiet_environment();
  hot.after.thermal_violation_ms += 40;
  const CaseJudgement j = judge_case(base, timed_case(hot), nullptr, true, o);
  EXPECT_EQ(j.verdict, Verdict::kEnvironment);
  EXPECT_NE(j.reason.find("candidate disturbed when timed (5 of 5 processes disturbed; process 1: GPU throttled: "
                          "thermal limit for 40 ms of 2.1 s"),
            std::string::npos)
      << j.reason;
}

TEST(GpuCompare, AChangedGpuSetupIsTheEnvironmentNamingTheChanges) {
  const CompareOptions o;
  const CaseResult base = timed_case(quiet_environment());
  GpuEnvironment other = quiet_environment();
  other.setup.driver = "580.172.08";
  other.setup.power_limit_w = 600;
  other.setup.persistence = false;
  CaseJudgement j = judge_case(base, timed_case(other), nullptr, true, o);
  EXPECT_EQ(j.verdict, Verdict::kEnvironment);
  EXPECT_EQ(j.reason.rfind("GPU setup changed (driver 580.159.04→580.172.08, power limit 700→600 W, persistence "
                           "on→off): ",
                           0),
            0u)
      << j.reason;
  // Paired runs too.
  CompareOptions paired = o;
  paired.paired = true;
  j = judge_case(base, timed_case(other), nullptr, true, paired);
  EXPECT_EQ(j.verdict, Verdict::kEnvironment);
  // What one side does not know is not a difference; library versions are the code's.
  other = quiet_environment();
  other.setup.ecc.reset();
  other.setup.cudnn = "9.20.0";
  other.not_read = "";
  EXPECT_TRUE(gpu_setup_differences(base.gpu->setup, other.setup).empty());
  other.setup.uuid = "GPU-1d2e";
  other.setup.mig = true;
  other.setup.max_sm_mhz = 1830;
  EXPECT_EQ(gpu_setup_differences(base.gpu->setup, other.setup),
            (std::vector<std::string>{"GPU GPU-8c6f0a52-1111-2222-3333-444455556666→GPU-1d2e", "MIG off→on",
                                      "max SM clock 1980→1830 MHz"}));
}

// ---- warm-up until the clock settles ----

// Five samples after one warm-up iteration: the settling is what these tests watch.
TimingConfig quick_timing() {
  return {.warmup_ms = 0, .warmup_iterations = 1, .min_iterations = 5, .max_iterations = 5, .target_rel_ci = 10,
          .process_samples = 5};
}

void spin_ms(double ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(ms);
  while (std::chrono::steady_clock::now() < until) {
  }
}

TEST(TimerClockSettling, WarmsUpUntilTwoReadsAgreeWithinOnePercent) {
  // A clock that ramps 1000, 1500, 1900, then holds within 1% (1910): settled on the 4th read.
  const std::vector<double> ramp{1000, 1500, 1900, 1910, 1910};
  size_t reads = 0;
  std::vector<std::string> order;
  DeviceClocks clocks;
  clocks.sm_clock_mhz = [&] { return ramp[std::min(reads++, ramp.size() - 1)]; };
  clocks.timed_phase_begins = [&] { order.push_back("begins at read " + std::to_string(reads)); };
  clocks.timed_phase_ends = [&] { order.push_back("ends"); };
  auto work = [] { spin_ms(5); };
  const SideBySide r = time_side_by_side(work, work, quick_timing(), 1, nullptr, &clocks);
  EXPECT_TRUE(r.settling.settled);
  EXPECT_EQ(r.settling.mhz, 1910);
  EXPECT_EQ(reads, 4u);
  EXPECT_GE(r.settling.ms, 3 * kSettleReadGapMs);  // three gaps of at least 50 ms
  EXPECT_LT(r.settling.ms, kSettleCapMs);
  EXPECT_EQ(order, (std::vector<std::string>{"begins at read 4", "ends"}));
  // Into the case's record.
  CaseResult c;
  c.gpu.emplace();
  store_timing(SideBySide(r), c);
  EXPECT_EQ(c.gpu->settled_sm_mhz, 1910);
  EXPECT_TRUE(c.gpu->settled);
  EXPECT_EQ(c.gpu->settle_ms, r.settling.ms);
}

TEST(TimerClockSettling, ACapEndsAClockThatKeepsMovingAndNoClockMeansNoWait) {
  bool high = false;
  DeviceClocks clocks;
  clocks.sm_clock_mhz = [&] { return (high = !high) ? 1980.0 : 1500.0; };
  auto work = [] { spin_ms(1); };
  const SideBySide r = time_side_by_side(work, work, quick_timing(), 1, nullptr, &clocks);
  EXPECT_FALSE(r.settling.settled);
  EXPECT_GE(r.settling.ms, kSettleCapMs);
  EXPECT_LT(r.settling.ms, kSettleCapMs + 1000);
  // Unknown clock: no extra warm-up.
  clocks.sm_clock_mhz = [] { return kNaN; };
  const SideBySide unknown = time_side_by_side(work, work, quick_timing(), 1, nullptr, &clocks);
  EXPECT_TRUE(std::isnan(unknown.settling.ms));
  EXPECT_FALSE(unknown.settling.settled);
}

// ---- NVML at run time ----

TEST(GpuMonitor, AMissingLibraryIsNotReadWithoutACrash) {
  DeviceDescription d{"NVIDIA H200", "GPU-8c6f0a52-1111-2222-3333-444455556666", "13.0", "13.1.0", "9.19.0"};
  const GpuMonitor monitor(d, "libnvidia-ml-absent.so.1");
  EXPECT_NE(monitor.not_read().find("libnvidia-ml-absent.so.1"), std::string::npos) << monitor.not_read();
  // The backend's names and versions stay; what NVML reads is unknown.
  const GpuSetup s = monitor.setup();
  EXPECT_EQ(s.name, "NVIDIA H200");
  EXPECT_EQ(s.uuid, d.uuid);
  EXPECT_EQ(s.cudnn, "9.19.0");
  EXPECT_EQ(s.driver, "");
  EXPECT_TRUE(std::isnan(s.power_limit_w));
  EXPECT_FALSE(s.ecc.has_value());
  const GpuReading r = monitor.read();
  EXPECT_TRUE(std::isnan(r.sm_mhz));
  EXPECT_FALSE(r.compute_processes.has_value());
  EXPECT_EQ(r.own_pid, getpid());
  EXPECT_TRUE(std::isnan(monitor.sm_clock_mhz()));
  // Watching it: the record says why, once; the timer gets no clock to wait for.
  GpuEnvironment env;
  DeviceClocks clocks;
  watch_gpu(monitor, env, clocks);
  EXPECT_EQ(env.not_read, monitor.not_read());
  EXPECT_FALSE(clocks.sm_clock_mhz);
  EXPECT_FALSE(clocks.timed_phase_begins);
  EXPECT_EQ(gpu_summary(env), "GPU state not read: " + monitor.not_read());
  EXPECT_EQ(gpu_disturbance_of(env), "");
}

TEST(GpuMonitor, ALibraryWithoutNvmlsEntryPointsIsNotRead) {
  const GpuMonitor monitor(DeviceDescription{}, "libc.so.6");
  EXPECT_EQ(monitor.not_read(), "libc.so.6 has no nvmlInit_v2");
  EXPECT_TRUE(std::isnan(monitor.read().power_w));
}

TEST(GpuMonitor, TheDefaultLibraryOnThisMachine) {
  const GpuMonitor monitor(DeviceDescription{});
  const std::string why = monitor.not_read();
  // A device without a UUID is never read: where NVML loads (a GPU node) that is the
  // reason; without a driver (no libnvidia-ml.so.1) the message names the library.
  if (why.find(kNvmlLibrary) == std::string::npos) {
    EXPECT_EQ(why, "the backend gave no GPU UUID to find the device by");
  }
}

// On a GPU node: device 0 read through NVML for real.
TEST(GpuMonitor, ReadsDeviceZeroWhereThereIsOne) {
  DeviceDescription d;
  try {
    d = backend_named("cuda")->describe_device();
  } catch (const Error& e) {
    GTEST_SKIP() << "no CUDA device: " << e.what();
  }
  const GpuMonitor monitor(d);
  if (!monitor.not_read().empty()) GTEST_SKIP() << "NVML not loaded: " << monitor.not_read();
  const GpuSetup s = monitor.setup();
  EXPECT_EQ(s.uuid, d.uuid);
  EXPECT_FALSE(s.name.empty());
  EXPECT_FALSE(s.driver.empty());
  EXPECT_FALSE(s.cuda_driver.empty());
  EXPECT_FALSE(s.cuda_runtime.empty());
  EXPECT_FALSE(s.cublas.empty());
  EXPECT_FALSE(s.cudnn.empty());
  EXPECT_GT(s.power_limit_w, 0);
  EXPECT_GT(s.max_sm_mhz, 0);
  const GpuReading r = monitor.read();
  EXPECT_GT(r.sm_mhz, 0);
  EXPECT_GT(r.memory_mhz, 0);
  EXPECT_GT(r.power_w, 0);
  EXPECT_GT(r.temperature_c, 0);
  EXPECT_TRUE(r.clock_event_reasons.has_value());
  EXPECT_GE(r.power_violation_ms, 0);
  ASSERT_TRUE(r.compute_processes.has_value());
  EXPECT_GE(r.compute_processes->size(), 1u);  // ours, since the backend made a context
  std::cout << "NVML: " << s.name << " " << s.uuid << ", driver " << s.driver << ", CUDA " << s.cuda_driver << ", "
            << gpu_summary(GpuEnvironment{"", s, r, r, kNaN, kNaN, kNaN, false, 0}) << "\n";
}

}  // namespace
}  // namespace fb
