// CaseResult's JSON form: every field survives to_json -> from_json exactly (it carries
// results between worker processes and MPI ranks), non-finite doubles included, and a
// damaged document is refused with the field named.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/ir/error.h"
#include "harness/cases/case_json.h"

namespace fb {
namespace {

// Every field set to a value different from its default, so a field the JSON forgets
// shows up as a mismatch.
CaseResult full_result() {
  CaseResult r;
  CaseSpec& s = r.spec;
  s.scenario = "bert";
  s.scenario_file = "/tmp/bert.json";
  s.model = "zoo:bert?layers=1";
  s.model_hash = "abc123";
  s.precision = fb::Precision::FP32;
  s.batch = 8;
  s.fusion = fb::FusionLevel::Aggressive;
  s.threads = 2;
  s.engine_shapes = "dynamic";
  s.dynamic_batch = {1, 8, 16};
  s.winograd = false;
  s.timing = {150, 4, 25, 999, 3.5, 0.015, "speedup-ci", {0, 1}, 12.5, 0.25, 3, 60, 9, 0.05, "block", 7};
  s.accuracy = {2e-4, 3e-3};
  s.gate.min_speedup = 1.3;
  s.gate.max_regression = 0.05;
  s.fusion_limits = {{"layer0/*"}, {"Softmax"}, {"t1"}};
  s.seed = 99;
  r.status = fb::CaseStatus::kFailed;
  r.error = "";
  for (Measurement* m : {&r.engine, &r.reference}) {
    m->executor = m == &r.engine ? "engine" : "reference";
    m->samples_ms = {1.25, 1.5, 0.875, 1.0 / 3};
    m->sample_process = {0, 0, 1, 1};
    m->stats = {4, 1.1, 1.4, 1.45, 1.49, 1.2, 0.2, 0.875, 1.5, 0.17, 0.9, 1.3, 0.95, 1.35, 1, 2};
    m->items_per_s = 7272.5;
    m->first_iteration_ms = 9.75;
    m->minor_faults = {1, 9, 4.5};
    m->major_faults = {0, 2, 0.25};
  }
  r.reference.samples_ms[0] = 2.5;
  r.accuracy = {1e-5, 2e-4, 0.9999, false, "output 0 at [3]"};
  r.speedup = 1.875;
  r.speedup_ci_low = 1.7;
  r.speedup_ci_high = 2.01;
  r.stop_reason = "time-cap";
  r.noisy = true;
  r.timer_overhead_ns = 31.5;
  r.interference = {1.5, 1.75, 250, 4000, 3000, 3100};
  r.process_noise = {3, 0.021, 0.018, 0.006};
  r.pinned_cpus = "0,1";
  r.build_ms = 12.25;
  r.specialize_ms = 3.5;
  r.engine_memory_bytes = 1 << 20;
  r.reference_memory_bytes = 3 << 20;
  r.onnx_nodes = 107;
  r.build_log = "line 1\nline \"2\"\n";
  r.layers = {{0, "l0", "MatMul", {"a", "b"}, "onednn.matmul", "fp32", {{1, 16, 64}, {64, 64}}, {{1, 16, 64}}, 131072, 40960},
              {1, "l1 + gelu", "fusebench.FusedMatMul", {"c"}, "onednn.matmul+gelu", "fp32", {}, {}, 0, 0}};
  r.timed_on = {"node7", "AMD EPYC", "avx512f avx512_bf16", 2};
  r.isolation = "host-exclusive";
  r.worker_lost = true;
  r.gpu.emplace();
  r.gpu->setup.name = "NVIDIA H200";
  r.gpu->after.sm_mhz = 1755;
  r.gpu->settled = true;
  r.fusion_decisions = {{"attention-fusion", "s", {"q", "s"}, "", "node 'q' is excluded from fusion"}};
  r.spec.profile_iterations = 2;
  r.profile.emplace();
  r.profile->iterations = 2;
  r.profile->total_ms = 0.75;
  r.profile->layers = {{0, "l0", "MatMul", "onednn.matmul", 0.5, 131072, 40960, {"a", "b"}, "", {0.5, 0.625}},
                       {1, "l1 + gelu", "fusebench.FusedMatMul", "onednn.matmul+gelu", 0.25, 0, 0, {"c"}, "", {0.25, 0.25}}};
  r.profile->nodes = {{"/m/a", "/m/", 0, 0.375, true}, {"/m/b", "/m/", 0, 0.125, true}, {"c", "", 1, 0.25, false}};
  r.profile->modules = roll_up_modules(r.profile->nodes, r.profile->total_ms);
  r.profile_wall_ms = 41.25;
  return r;
}

TEST(CaseJson, EveryFieldRoundTrips) {
  const CaseResult r = full_result();
  const nlohmann::json j = case_result_to_json(r);
  EXPECT_EQ(case_result_from_json(j), r);
  // Through text too, as it crosses a pipe: doubles print with round-trip precision.
  EXPECT_EQ(case_result_from_json(nlohmann::json::parse(j.dump())), r);
}

TEST(CaseJson, DefaultResultRoundTrips) {
  CaseResult r;
  r.process_noise = {1, 0, 0, 0};  // the defaults are NaN, which never compares equal
  EXPECT_EQ(case_result_from_json(nlohmann::json::parse(case_result_to_json(r).dump())), r);
}

TEST(CaseJson, NonFiniteDoublesSurvive) {
  CaseResult r = full_result();
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  r.accuracy.max_abs_err = nan;
  r.accuracy.max_rel_err = inf;
  r.interference.cpu_mhz_before = -inf;
  r.process_noise.speedup = nan;
  const CaseResult back = case_result_from_json(nlohmann::json::parse(case_result_to_json(r).dump()));
  EXPECT_TRUE(std::isnan(back.accuracy.max_abs_err));
  EXPECT_EQ(back.accuracy.max_rel_err, inf);
  EXPECT_EQ(back.interference.cpu_mhz_before, -inf);
  EXPECT_TRUE(std::isnan(back.process_noise.speedup));
  EXPECT_EQ(back.engine, r.engine);
  EXPECT_EQ(back.spec, r.spec);
}

// The message reading `j` is refused with ("" when it was accepted).
std::string refusal(const nlohmann::json& j) {
  try {
    case_result_from_json(j);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CaseJson, DamagedDocumentNamesTheField) {
  nlohmann::json j = case_result_to_json(full_result());
  j["engine"]["samples_ms"][2] = "fast";
  EXPECT_EQ(refusal(j), "case result: field 'engine.samples_ms[2]' must be a number, got \"fast\"");
  j = case_result_to_json(full_result());
  j["reference"]["sample_process"] = {0, 1};
  EXPECT_THROW(case_result_from_json(j), Error);
  j = case_result_to_json(full_result());
  j["spec"]["timing"]["processes"] = 2.5;
  EXPECT_EQ(refusal(j), "case result: case config: field 'timing.processes': expected a positive integer, got 2.5");
  j = case_result_to_json(full_result());
  j["status"] = "skipped";
  EXPECT_EQ(refusal(j), "case result: field 'status': case status 'skipped' is not one of passed, failed, error");
  j = case_result_to_json(full_result());
  j["version"] = kCaseResultJsonVersion + 1;
  EXPECT_THROW(case_result_from_json(j), Error);
  EXPECT_THROW(case_result_from_json(nlohmann::json::array()), Error);
}

}  // namespace
}  // namespace fb
