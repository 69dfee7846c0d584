// The case table (harness/cases/case_fields.h) walked row by row: every row that says it is
// a matrix axis expands, every setting in the key separates cases and batch curves (but the
// curve's own axis), every exported setting has its column in its place, and the key of an
// existing case keeps its bytes. A new row that the readers and writers do not follow
// fails here, as does a new axis or key setting without an example value below.
#include <algorithm>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "engine/util/sha256.h"
#include "harness/cases/case_fields.h"
#include "harness/cases/scenario.h"
#include "reports/export.h"

namespace {

using fb::CaseField;
using fb::CaseSpec;
using nlohmann::json;

// Two values of each matrix axis, and what else its scenario needs (instances: a pool).
struct AxisExample {
  json values;
  json scenario = json::object();
};
const std::map<std::string, AxisExample> kAxisExamples{
    {"precision", {{"fp32", "bf16"}}},
    {"batch", {{1, 8}}},
    {"fusion", {{"none", "aggressive"}}},
    {"device", {{"cpu", "cuda:1"}}},
    {"threads", {{1, 2}}},
    {"engine_shapes", {{"static", "dynamic"}}},
    {"cuda_graph", {{false, true}}},
    {"load", {{"single-stream", "offline"}}},
    {"instances", {{1, 2}, {{"load", "offline"}}}},
};

TEST(CaseFieldTable, EveryMatrixAxisExpandsAndTheTopLevelFormIsOneValue) {
  std::set<int> nesting;
  for (const CaseField& f : fb::case_fields()) {
    const bool axis = f.in_scenario == fb::InScenario::kInMatrix || f.in_scenario == fb::InScenario::kInMatrixOrTop;
    EXPECT_EQ(axis, f.matrix_nesting >= 0) << f.path << ": a matrix axis has its loop, and only an axis";
    if (!axis) continue;
    EXPECT_TRUE(nesting.insert(f.matrix_nesting).second) << f.path << " shares its loop";
    ASSERT_TRUE(kAxisExamples.count(f.path)) << f.path << ": give the new axis two example values here";
    const AxisExample& ex = kAxisExamples.at(f.path);
    json doc = ex.scenario;
    doc["model"] = "zoo:mlp";
    doc["matrix"][f.path] = ex.values;
    const std::vector<CaseSpec> cases = fb::expand_cases(fb::parse_scenario(doc.dump(), "axis.json"));
    ASSERT_EQ(cases.size(), 2u) << f.path;
    EXPECT_NE(cases[0].case_key(), cases[1].case_key()) << f.path;
    EXPECT_NE(cases[0].to_json(), cases[1].to_json()) << f.path;
    EXPECT_EQ(fb::parse_scenario(doc.dump(), "axis.json").axis(f.path).size(), 2u) << f.path;
    if (f.in_scenario != fb::InScenario::kInMatrixOrTop) continue;
    json top = ex.scenario;
    top["model"] = "zoo:mlp";
    top[f.path] = ex.values[1];
    const std::vector<CaseSpec> one = fb::expand_cases(fb::parse_scenario(top.dump(), "axis.json"));
    ASSERT_EQ(one.size(), 1u) << f.path;
    EXPECT_EQ(one[0].to_json(), cases[1].to_json()) << f.path;
  }
  ASSERT_FALSE(nesting.empty());
  EXPECT_EQ(*nesting.begin(), 0);
  EXPECT_EQ(*nesting.rbegin(), int(nesting.size()) - 1) << "loops are numbered 0, 1, ... without gaps";
  EXPECT_EQ(fb::matrix_axes().front()->path, std::string("device"));  // a device's cases run one after another
  EXPECT_EQ(kAxisExamples.size(), nesting.size()) << "an example for an axis the table no longer has";
}

// An axis only some cases have adds none to the others: a single-stream case has no pool.
TEST(CaseFieldTable, AnAxisACaseDoesNotHaveAddsNoCases) {
  const std::vector<CaseSpec> cases = fb::expand_cases(fb::parse_scenario(
      R"({"model": "zoo:mlp", "matrix": {"load": ["single-stream", "offline"], "instances": [2, 3]}})", "pool.json"));
  ASSERT_EQ(cases.size(), 3u);
  EXPECT_EQ(cases[0].load.scenario, "single-stream");
  EXPECT_EQ(cases[0].load.instances, 1);
  EXPECT_EQ(cases[1].load.instances, 2);
  EXPECT_EQ(cases[2].load.instances, 3);
}

// Puts `v` at a table path ("timing.warmup_ms") of a stored config.
void set_path(json& j, const std::string& path, const json& v) {
  const size_t dot = path.find('.');
  if (dot == std::string::npos) j[path] = v;
  else j[path.substr(0, dot)][path.substr(dot + 1)] = v;
}

// A value of each setting the key may hold, other than the default and as a stored config
// writes it, and what the case needs for the setting to be in its key (calibration: int8).
struct KeyExample {
  json value;
  json base = json::object();
};
const json kDynamic = {{"min", 1}, {"opt", 4}, {"max", 8}};
const std::map<std::string, KeyExample> kKeyExamples{
    {"precision", {"bf16"}},
    {"batch", {8}},
    {"fusion", {"none"}},
    {"device", {"cuda"}},
    {"threads", {2}},
    {"engine_shapes", {"dynamic", {{"dynamic_batch", kDynamic}}}},
    {"dynamic_batch", {{{"min", 1}, {"opt", 2}, {"max", 2}}, {{"engine_shapes", "dynamic"}, {"dynamic_batch", kDynamic}}}},
    {"winograd", {false}},
    {"cuda_graph", {true}},
    {"load", {"offline"}},
    {"instances", {2, {{"load", "offline"}}}},
    {"load_settings.samples_per_query", {4, {{"load", "multi-stream"}}}},
    {"load_settings.target_qps", {100.0, {{"load", "server"}}}},
    {"load_settings.latency_bound_ms", {5.0, {{"load", "server"}}}},
    {"seed", {7}},
    {"fusion_limits.exclude_nodes", {json::array({"/a/*"})}},
    {"fusion_limits.exclude_ops", {json::array({"Softmax"})}},
    {"fusion_limits.partition_points", {json::array({"t1"})}},
    {"precision_constraints.mode", {"obey", {{"precision_constraints", {{"layers", json::array({json::array({"Softmax", "fp32"})})}}}}}},
    {"precision_constraints.layers", {json::array({json::array({"Softmax", "bf16"})})}},
    {"calibration.method", {"minmax", {{"precision", "int8"}}}},
    {"calibration.percentile", {99.9, {{"precision", "int8"}}}},
    {"calibration.batches", {3, {{"precision", "int8"}}}},
    {"calibration.seed", {3, {{"precision", "int8"}}}},
    {"calibration.data", {json::array({{{"x", "a.npy"}}}), {{"precision", "int8"}}}},
    {"shape_inputs", {{{"shape", {3, 2}}}}},
    {"plugins", {{{"libraries", {"/p/libx.so"}}, {"insert", json::array()}, {"cost", true}}}},
};

// Every setting the key holds changes the key, and the batch curve's key unless the curve
// runs along it (batch): cases with other shape inputs, plugins, calibration or constraints
// are curves of their own.
TEST(CaseFieldTable, EverySettingInTheKeySeparatesCasesAndCurves) {
  size_t walked = 0;
  for (const CaseField& f : fb::case_fields()) {
    if (!f.in_key) continue;
    ASSERT_TRUE(kKeyExamples.count(f.path)) << f.path << ": give the new key setting an example value here";
    const KeyExample& ex = kKeyExamples.at(f.path);
    json base = ex.base;
    base["model"] = "zoo:mlp";
    base["model_hash"] = "00ff";
    json changed = base;
    set_path(changed, f.path, ex.value);
    const CaseSpec a = CaseSpec::from_json(base), b = CaseSpec::from_json(changed);
    EXPECT_TRUE(f.in_key(b)) << f.path;
    EXPECT_NE(a.case_key(), b.case_key()) << f.path;
    if (f.curve_axis) EXPECT_EQ(a.curve_key(), b.curve_key()) << f.path;
    else EXPECT_NE(a.curve_key(), b.curve_key()) << f.path;
    ++walked;
  }
  EXPECT_EQ(walked, kKeyExamples.size()) << "an example for a setting the key no longer holds";
  EXPECT_TRUE(fb::case_field("batch").curve_axis);
}

// Settings outside the key (how a case is timed, its tolerances) change neither key.
TEST(CaseFieldTable, ASettingOutsideTheKeyChangesNeither) {
  CaseSpec a;
  a.model = "zoo:mlp";
  CaseSpec b = a;
  b.timing.processes = 3;
  b.accuracy.atol = 0.5;
  b.gate.min_speedup = 2;
  b.profile_iterations = 5;
  EXPECT_EQ(a.case_key(), b.case_key());
  EXPECT_EQ(a.curve_key(), b.curve_key());
}

// The exported settings take the places the table gives: the first format's four between
// the model and the executor, the rest appended after the status, in place order.
TEST(CaseFieldTable, EveryExportedSettingHasItsColumnInItsPlace) {
  const std::vector<const CaseField*>& fields = fb::exported_fields();
  ASSERT_GT(fields.size(), size_t(fb::kExportPlacesBeforeStatistics));
  for (size_t i = 0; i < fields.size(); ++i) EXPECT_EQ(fields[i]->export_place, int(i) + 1) << fields[i]->path;
  const std::vector<std::string>& cols = fb::export_columns();
  const size_t model = std::find(cols.begin(), cols.end(), "model") - cols.begin();
  const size_t status = std::find(cols.begin(), cols.end(), "status") - cols.begin();
  for (size_t i = 0; i < fields.size(); ++i) {
    const size_t at = i < size_t(fb::kExportPlacesBeforeStatistics) ? model + 1 + i : status + 1 + (i - fb::kExportPlacesBeforeStatistics);
    ASSERT_LT(at, cols.size());
    EXPECT_EQ(cols[at], fields[i]->path);
  }
  EXPECT_EQ(cols.back(), fields.back()->path);
  // A column's value is the case's, defaults included (a CPU case exports "cpu", not null).
  const CaseSpec plain;
  for (const CaseField* f : fields) EXPECT_FALSE(fb::export_value(*f, plain).is_null()) << f->path;
}

// A default case's key, computed as it was before the table drove the matrix and the
// curve: moving settings between tables must not move a user's history.
TEST(CaseFieldTable, APlainCaseKeepsItsKey) {
  CaseSpec s;
  s.model = "zoo:mlp";
  s.model_hash = "00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff";
  EXPECT_EQ(s.key_json(), R"({"batch":1,"fusion":"standard","precision":"fp32","seed":1234,"threads":1})");
  EXPECT_EQ(s.case_key(), fb::sha256_hex(s.model_hash + "|" + s.key_json()).substr(0, 16));
  EXPECT_EQ(s.case_key(), "5fa628ade42d9885");
  const std::vector<CaseSpec> cases = fb::expand_cases(fb::parse_scenario(R"({"model": "zoo:mlp"})", "plain.json"));
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].key_json(), s.key_json());
}

}  // namespace
