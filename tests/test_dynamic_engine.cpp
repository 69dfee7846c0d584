// Dynamic engines (engine/builder/dynamic_engine.h): built for an optimization profile,
// one static specialization per shape. Each shape gives exactly what the static engine
// built for it gives; a shape outside the profile, or a profile that contradicts the
// model, is an error naming the input and dimension; the scenario's engine_shapes axis
// gives static and dynamic cases whose keys and stored rows tell them apart.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "engine/builder/builder.h"
#include "engine/builder/dynamic_engine.h"
#include "engine/ir/error.h"
#include "engine/reference/reference_executor.h"
#include "engine/runtime/thread_scope.h"
#include "harness/cases/case_fields.h"
#include "harness/cases/inputs.h"
#include "harness/cases/model_source.h"
#include "harness/cases/scenario.h"
#include "harness/run/run_loop.h"
#include "harness/run/runner.h"
#include "harness/store/result_store.h"
#include "scratch_dir.h"

namespace fb {
namespace {

const char* kMobilenet = "zoo:mobilenet?width=8&blocks=3&image=16";

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

BuildConfig dynamic_config(int64_t min, int64_t opt, int64_t max) {
  BuildConfig c;
  c.fusion = FusionLevel::Aggressive;
  c.threads = 2;
  c.dynamic_batch = {min, opt, max};
  return c;
}

TEST(DynamicEngine, EveryBatchInTheRangeGivesWhatItsStaticEngineGives) {
  const LoadedModel m = load_model(kMobilenet);
  ThreadScope threads(2);
  threads.run([&] {
    DynamicEngine dynamic(m.graph, dynamic_config(1, 4, 6));
    EXPECT_EQ(dynamic.specializations_built(), 1u);  // opt, at build time
    for (int64_t batch : {4, 1, 6, 3}) {
      ReferenceExecutor ref(m.graph, batch);
      const std::vector<Tensor> inputs = make_inputs(m.graph, ref.input_shapes(), 11);
      dynamic.run(inputs);
      BuildConfig fixed = dynamic_config(0, 0, 0);
      fixed.dynamic_batch = {};
      fixed.batch = batch;
      auto engine = build_engine(m.graph, fixed);
      engine->run(inputs);
      ASSERT_EQ(dynamic.outputs().size(), engine->outputs().size());
      for (size_t k = 0; k < engine->outputs().size(); ++k)
        EXPECT_TRUE(same_bytes(dynamic.outputs()[k], engine->outputs()[k])) << "batch " << batch << " output " << k;
    }
    EXPECT_EQ(dynamic.specializations_built(), 4u);  // opt, then 1, 6 and 3 on first sight
    // A shape seen before runs its kept specialization.
    ReferenceExecutor ref(m.graph, 1);
    dynamic.run(make_inputs(m.graph, ref.input_shapes(), 11));
    EXPECT_EQ(dynamic.specializations_built(), 4u);
  });
}

TEST(DynamicEngine, ShapesOutsideTheProfileAreRefusedNamingInputAndDimension) {
  const LoadedModel m = load_model(kMobilenet);
  DynamicEngine dynamic(m.graph, dynamic_config(2, 2, 4));
  const std::string too_big = error_of([&] { dynamic.engine_for(dynamic.shapes_at_batch(5)); });
  EXPECT_NE(too_big.find("input 'input' dimension 0 is 5, outside the engine's optimization profile [2, 4]"), std::string::npos)
      << too_big;
  const std::string too_small = error_of([&] { dynamic.engine_for(dynamic.shapes_at_batch(1)); });
  EXPECT_NE(too_small.find("dimension 0 is 1"), std::string::npos) << too_small;
  // The image size is fixed by the model: not a dimension a shape may change.
  std::vector<Shape> wrong = dynamic.shapes_at_batch(2);
  wrong[0][2] = 32;
  const std::string fixed = error_of([&] { dynamic.engine_for(wrong); });
  EXPECT_NE(fixed.find("dimension 2 is 32, outside the engine's optimization profile [16, 16]"), std::string::npos) << fixed;
  EXPECT_EQ(dynamic.specializations_built(), 1u);
}

TEST(DynamicEngine, KeepsTheMostRecentlyUsedSpecializations) {
  const LoadedModel m = load_model(kMobilenet);
  DynamicEngine dynamic(m.graph, dynamic_config(1, 1, 4), {}, 2);
  dynamic.engine_for(dynamic.shapes_at_batch(2));  // kept: 1, 2
  dynamic.engine_for(dynamic.shapes_at_batch(1));  // 1 used last
  dynamic.engine_for(dynamic.shapes_at_batch(3));  // drops 2
  EXPECT_EQ(dynamic.specializations_built(), 3u);
  dynamic.engine_for(dynamic.shapes_at_batch(1));
  EXPECT_EQ(dynamic.specializations_built(), 3u);
  dynamic.engine_for(dynamic.shapes_at_batch(2));  // built again
  EXPECT_EQ(dynamic.specializations_built(), 4u);
  std::string log;
  for (const std::string& line : dynamic.build_log()) log += line + "\n";
  EXPECT_NE(log.find("dropped the specialization for input [2,3,16,16] (least recently used)"), std::string::npos) << log;
  EXPECT_NE(log.find("optimization profile: input min [1,3,16,16], opt [1,3,16,16], max [4,3,16,16]"), std::string::npos) << log;
  EXPECT_GT(dynamic.last_specialization_ms(), 0);
}

TEST(DynamicEngine, ProfilesThatContradictTheModelAreErrors) {
  const LoadedModel m = load_model(kMobilenet);
  BuildConfig c;
  c.shape_profile["images"] = {{1, 3, 16, 16}, {1, 3, 16, 16}, {2, 3, 16, 16}};
  EXPECT_NE(error_of([&] { resolve_shape_profile(m.graph, c); }).find("names 'images', which is not a graph input"),
            std::string::npos);
  c.shape_profile = {{"input", {{2, 3, 16, 16}, {1, 3, 16, 16}, {4, 3, 16, 16}}}};
  EXPECT_NE(error_of([&] { resolve_shape_profile(m.graph, c); })
                .find("optimization profile for 'input', dimension 0: expected min <= opt <= max, got 2, 1, 4"),
            std::string::npos);
  c.shape_profile = {{"input", {{1, 3, 16, 16}, {1, 3, 16, 16}, {1, 3, 32, 32}}}};
  EXPECT_NE(error_of([&] { resolve_shape_profile(m.graph, c); }).find("dimension 2: the model fixes it at 16"), std::string::npos);
  c.shape_profile = {{"input", {{1, 3, 16}, {1, 3, 16}, {1, 3, 16}}}};
  EXPECT_NE(error_of([&] { resolve_shape_profile(m.graph, c); }).find("the model gives rank 4, the profile rank 3"),
            std::string::npos);
  // A static build refuses a profile rather than ignoring it.
  EXPECT_NE(error_of([&] { build_engine(m.graph, dynamic_config(1, 1, 2)); }).find("makes a DynamicEngine"), std::string::npos);
}

TEST(DynamicEngineScenario, TheAxisGivesStaticAndDynamicCasesWithTheirOwnKeys) {
  const Scenario plain = parse_scenario(R"({"model": "zoo:mlp", "matrix": {"batch": [1, 8]}})", "s.json");
  const Scenario both = parse_scenario(
      R"({"model": "zoo:mlp", "matrix": {"batch": [1, 8], "engine_shapes": ["static", "dynamic"]}})", "s.json");
  const std::vector<CaseSpec> a = expand_cases(plain), b = expand_cases(both);
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 4u);
  // A static case keeps the key and stored config it had before the axis existed.
  EXPECT_EQ(b[0].case_key(), a[0].case_key());
  EXPECT_EQ(b[0].to_json(), a[0].to_json());
  EXPECT_FALSE(b[0].to_json().contains("engine_shapes"));
  // The dynamic twin: its own key; the range defaults to 1 .. the largest batch, opt there.
  EXPECT_TRUE(b[1].dynamic());
  EXPECT_NE(b[1].case_key(), a[0].case_key());
  EXPECT_EQ(b[1].dynamic_batch, (BatchRange{1, 8, 8}));
  EXPECT_EQ(b[1].label(), "s b=1 fp32 standard t=1 dynamic[1..8]");
  EXPECT_EQ(CaseSpec::from_json(b[1].to_json()), b[1]);
  EXPECT_EQ(build_config_of(b[1]).dynamic_batch, (BatchRange{1, 8, 8}));
  EXPECT_TRUE(build_config_of(b[0]).dynamic_batch.empty());
  // A stored config that says dynamic without its range is an error, not a static engine.
  nlohmann::json no_range = b[1].to_json();
  no_range.erase("dynamic_batch");
  EXPECT_NE(error_of([&] { CaseSpec::from_json(no_range); })
                .find("case config: field 'dynamic_batch': missing: a case with engine_shapes 'dynamic' needs its range"),
            std::string::npos);

  // --resume and --shard tell the twins apart; the static one keeps its old identity.
  EXPECT_NE(matrix_identity(b[1]), matrix_identity(b[0]));
  EXPECT_EQ(matrix_identity(b[0]), matrix_identity(a[0]));
  EXPECT_EQ(shard_cases(b, {1, 2}).size() + shard_cases(b, {2, 2}).size(), 4u);

  const Scenario given = parse_scenario(
      R"({"model": "zoo:mlp", "matrix": {"batch": [2], "engine_shapes": ["dynamic"]}, "dynamic_batch": {"min": 1, "opt": 4, "max": 16}})",
      "s.json");
  EXPECT_EQ(expand_cases(given)[0].dynamic_batch, (BatchRange{1, 4, 16}));
  // Another range is another case.
  const Scenario other = parse_scenario(
      R"({"model": "zoo:mlp", "matrix": {"batch": [2], "engine_shapes": ["dynamic"]}, "dynamic_batch": {"min": 1, "opt": 4, "max": 32}})",
      "s.json");
  EXPECT_NE(expand_cases(given)[0].case_key(), expand_cases(other)[0].case_key());
}

TEST(DynamicEngineScenario, WrongFieldsAreNamed) {
  auto message = [](const std::string& text) { return error_of([&] { parse_scenario(text, "s.json"); }); };
  EXPECT_NE(message(R"({"model": "zoo:mlp", "matrix": {"engine_shapes": ["elastic"]}})").find("matrix.engine_shapes[0]"),
            std::string::npos);
  EXPECT_NE(message(R"({"model": "zoo:mlp", "matrix": {"batch": [32], "engine_shapes": ["dynamic"]}, "dynamic_batch": {"min": 1, "opt": 4, "max": 16}})")
                .find("field 'dynamic_batch': matrix.batch 32 lies outside the range [1, 16]"),
            std::string::npos);
  EXPECT_NE(message(R"({"model": "zoo:mlp", "matrix": {"engine_shapes": ["dynamic"]}, "dynamic_batch": {"min": 4, "opt": 2, "max": 8}})")
                .find("expected min <= opt <= max, got 4, 2, 8"),
            std::string::npos);
  EXPECT_NE(message(R"({"model": "zoo:mlp", "matrix": {"engine_shapes": ["dynamic"]}, "dynamic_batch": {"min": 1, "max": 8}})")
                .find("dynamic_batch.opt"),
            std::string::npos);
  EXPECT_NE(message(R"({"model": "zoo:mlp", "dynamic_batch": {"min": 1, "opt": 1, "max": 8}})")
                .find("no case has a dynamic engine"),
            std::string::npos);
}

TEST(DynamicEngineRun, ACaseIsTimedThroughTheDynamicEngineAndStoredWithItsSpecializationTime) {
  ScratchDir dir("dynamic_run");
  Scenario s = parse_scenario(R"({"model": "zoo:mlp?in=32&hidden=64&out=8&layers=2",
      "matrix": {"batch": [2], "engine_shapes": ["static", "dynamic"]}, "dynamic_batch": {"min": 1, "opt": 4, "max": 4},
      "timing": {"processes": 1, "warmup_ms": 1, "warmup_iterations": 1, "min_iterations": 5, "max_seconds": 0.1}})",
                              "s.json");
  CaseRunner runner;
  std::vector<CaseResult> results;
  for (const CaseSpec& c : expand_cases(s)) results.push_back(runner.run(c));
  ASSERT_EQ(results.size(), 2u);
  for (const CaseResult& r : results) ASSERT_EQ(r.status, fb::CaseStatus::kPassed) << r.error;
  EXPECT_FALSE(results[0].specialize_ms);
  ASSERT_TRUE(results[1].specialize_ms);
  EXPECT_GT(*results[1].specialize_ms, 0);
  EXPECT_NE(results[1].build_log.find("specialized for input [2,32]"), std::string::npos) << results[1].build_log;
  EXPECT_NE(results[1].build_log.find("optimization profile: input min [1,32], opt [4,32], max [4,32]"), std::string::npos);
  // The layers stored are those of the specialization the case was timed on.
  EXPECT_EQ(results[1].layers.size(), results[0].layers.size());
  EXPECT_EQ(results[1].layers[0].input_shapes, results[0].layers[0].input_shapes);

  const std::string db = dir.path("d.db");
  {
    ResultStore store(db);
    const int64_t run = store.begin_run(RunInfo{});
    for (const CaseResult& r : results) store.write_case(run, r);
  }
  ResultStore store(db);
  const std::vector<StoredCase> back = store.load_cases(*store.latest_run());
  ASSERT_EQ(back.size(), 2u);
  EXPECT_FALSE(back[0].result.spec.dynamic());
  EXPECT_TRUE(back[1].result.spec.dynamic());
  EXPECT_EQ(back[1].result.spec.dynamic_batch, (BatchRange{1, 4, 4}));
  EXPECT_EQ(back[1].result.specialize_ms, results[1].specialize_ms);
  EXPECT_FALSE(back[0].result.specialize_ms);
}

}  // namespace
}  // namespace fb
