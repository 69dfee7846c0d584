#include "harness/cases/case_json.h"

#include "engine/ir/error.h"
#include "harness/cases/case_profile.h"
#include "harness/util/json_fields.h"

namespace fb {
namespace {

using json = nlohmann::json;
using namespace json_fields;

json faults_to_json(const FaultStats& f) { return {{"min", f.min}, {"max", f.max}, {"mean", number_or_null(f.mean)}}; }

json stats_to_json(const SampleStats& s) {
  return {{"n", s.n},
          {"median", number_or_null(s.median)},
          {"p90", number_or_null(s.p90)},
          {"p95", number_or_null(s.p95)},
          {"p99", number_or_null(s.p99)},
          {"mean", number_or_null(s.mean)},
          {"stddev", number_or_null(s.stddev)},
          {"min", number_or_null(s.min)},
          {"max", number_or_null(s.max)},
          {"cv", number_or_null(s.cv)},
          {"ci_low", number_or_null(s.ci_low)},
          {"ci_high", number_or_null(s.ci_high)},
          {"boot_ci_low", number_or_null(s.boot_ci_low)},
          {"boot_ci_high", number_or_null(s.boot_ci_high)},
          {"outliers_low", s.outliers_low},
          {"outliers_high", s.outliers_high}};
}

json measurement_to_json(const Measurement& m) {
  json samples = json::array();
  for (double v : m.samples_ms) samples.push_back(number_or_null(v));
  return {{"executor", m.executor},
          {"samples_ms", std::move(samples)},
          {"sample_process", m.sample_process},
          {"stats", stats_to_json(m.stats)},
          {"items_per_s", number_or_null(m.items_per_s)},
          {"first_iteration_ms", number_or_null(m.first_iteration_ms)},
          {"minor_faults", faults_to_json(m.minor_faults)},
          {"major_faults", faults_to_json(m.major_faults)}};
}

void read_faults(const json& j, const char* key, const std::string& prefix, FaultStats& f) {
  const std::string field = prefix + key;
  const json& o = object_at(j, key, field);
  read_int(o, "min", field + ".", f.min);
  read_int(o, "max", field + ".", f.max);
  read(o, "mean", field + ".", f.mean);
}

void read_measurement(const json& j, const char* key, Measurement& m) {
  const std::string field = key;
  const json& o = object_at(j, key, field);
  const std::string p = field + ".";
  read(o, "executor", p, m.executor);
  read_numbers(o, "samples_ms", p, m.samples_ms);
  read_ints(o, "sample_process", p, m.sample_process);
  if (!m.sample_process.empty() && m.sample_process.size() != m.samples_ms.size())
    throw Error("field '" + p + "sample_process' has " + std::to_string(m.sample_process.size()) +
                " entries for " + std::to_string(m.samples_ms.size()) + " samples");
  const json& s = object_at(o, "stats", p + "stats");
  const std::string sp = p + "stats.";
  SampleStats& st = m.stats;
  read_int(s, "n", sp, st.n);
  read(s, "median", sp, st.median);
  read(s, "p90", sp, st.p90);
  read(s, "p95", sp, st.p95);
  read(s, "p99", sp, st.p99);
  read(s, "mean", sp, st.mean);
  read(s, "stddev", sp, st.stddev);
  read(s, "min", sp, st.min);
  read(s, "max", sp, st.max);
  read(s, "cv", sp, st.cv);
  read(s, "ci_low", sp, st.ci_low);
  read(s, "ci_high", sp, st.ci_high);
  read(s, "boot_ci_low", sp, st.boot_ci_low);
  read(s, "boot_ci_high", sp, st.boot_ci_high);
  read_int(s, "outliers_low", sp, st.outliers_low);
  read_int(s, "outliers_high", sp, st.outliers_high);
  read(o, "items_per_s", p, m.items_per_s);
  read(o, "first_iteration_ms", p, m.first_iteration_ms);
  read_faults(o, "minor_faults", p, m.minor_faults);
  read_faults(o, "major_faults", p, m.major_faults);
}

// Tensor shapes: a list of lists of integers.
void read_shapes(const json& j, const char* key, const std::string& prefix, std::vector<std::vector<int64_t>>& out) {
  auto it = j.find(key);
  if (it == j.end()) return;
  const std::string field = prefix + key;
  if (!it->is_array()) bad_field(field, "a list of shapes", *it);
  out.clear();
  for (size_t i = 0; i < it->size(); ++i) {
    const json& shape = (*it)[i];
    if (!shape.is_array()) bad_field(field + "[" + std::to_string(i) + "]", "a list of integers", shape);
    std::vector<int64_t> dims;
    for (const json& d : shape) {
      if (!d.is_number_integer()) bad_field(field + "[" + std::to_string(i) + "]", "a list of integers", shape);
      dims.push_back(d.get<int64_t>());
    }
    out.push_back(std::move(dims));
  }
}

CaseResult from_json_fields(const json& j) {
  if (!j.is_object()) bad_field("(case result)", "an object", j);
  int version = kCaseResultJsonVersion;
  read_int(j, "version", "", version);
  if (version > kCaseResultJsonVersion)
    throw Error("version " + std::to_string(version) + " is newer than this fusebench reads (" +
                std::to_string(kCaseResultJsonVersion) + ")");
  CaseResult r;
  if (auto it = j.find("spec"); it != j.end()) r.spec = CaseSpec::from_json(*it);
  std::string status = case_status_name(r.status);
  read(j, "status", "", status);
  r.status = parse_case_status(status, "field 'status'");
  read(j, "error", "", r.error);
  read_measurement(j, "engine", r.engine);
  read_measurement(j, "reference", r.reference);

  const json& a = object_at(j, "accuracy", "accuracy");
  read(a, "max_abs_err", "accuracy.", r.accuracy.max_abs_err);
  read(a, "max_rel_err", "accuracy.", r.accuracy.max_rel_err);
  read(a, "cosine", "accuracy.", r.accuracy.cosine);
  read(a, "passed", "accuracy.", r.accuracy.passed);
  read(a, "detail", "accuracy.", r.accuracy.detail);

  read(j, "speedup", "", r.speedup);
  read(j, "speedup_ci_low", "", r.speedup_ci_low);
  read(j, "speedup_ci_high", "", r.speedup_ci_high);
  read(j, "stop_reason", "", r.stop_reason);
  read(j, "noisy", "", r.noisy);
  read(j, "timer_overhead_ns", "", r.timer_overhead_ns);

  const json& in = object_at(j, "interference", "interference");
  read(in, "load_before", "interference.", r.interference.load_before);
  read(in, "load_after", "interference.", r.interference.load_after);
  read(in, "other_cpu_ms", "interference.", r.interference.other_cpu_ms);
  read(in, "timed_wall_ms", "interference.", r.interference.timed_wall_ms);
  read(in, "cpu_mhz_before", "interference.", r.interference.cpu_mhz_before);
  read(in, "cpu_mhz_after", "interference.", r.interference.cpu_mhz_after);
  read(in, "steal_ms", "interference.", r.interference.steal_ms);
  read_int(in, "run_queue", "interference.", r.interference.run_queue);
  read_int(in, "involuntary_switches", "interference.", r.interference.involuntary_switches);
  read(j, "disturbed", "", r.disturbed);
  read_int(j, "retimed_processes", "", r.retimed_processes);
  if (auto it = j.find("gpu"); it != j.end() && !it->is_null()) r.gpu = it->get<GpuEnvironment>();

  const json& pn = object_at(j, "process_noise", "process_noise");
  read_int(pn, "processes", "process_noise.", r.process_noise.processes);
  read(pn, "engine", "process_noise.", r.process_noise.engine);
  read(pn, "reference", "process_noise.", r.process_noise.reference);
  read(pn, "speedup", "process_noise.", r.process_noise.speedup);

  read(j, "pinned_cpus", "", r.pinned_cpus);
  const json& host = object_at(j, "timed_on", "timed_on");
  read(host, "host", "timed_on.", r.timed_on.host);
  read(host, "cpu_model", "timed_on.", r.timed_on.cpu_model);
  read(host, "cpu_flags", "timed_on.", r.timed_on.cpu_flags);
  read_int(host, "cores", "timed_on.", r.timed_on.cores);
  read(j, "isolation", "", r.isolation);
  read(j, "worker_lost", "", r.worker_lost);
  read(j, "build_ms", "", r.build_ms);
  if (auto it = j.find("specialize_ms"); it != j.end() && !it->is_null()) {
    double ms = 0;
    read(j, "specialize_ms", "", ms);
    r.specialize_ms = ms;
  }
  read_int(j, "engine_memory_bytes", "", r.engine_memory_bytes);
  read_int(j, "reference_memory_bytes", "", r.reference_memory_bytes);
  read_int(j, "onnx_nodes", "", r.onnx_nodes);
  read(j, "build_log", "", r.build_log);
  if (auto it = j.find("layers"); it != j.end()) {
    if (!it->is_array()) bad_field("layers", "a list", *it);
    for (size_t i = 0; i < it->size(); ++i) {
      const json& l = (*it)[i];
      const std::string p = "layers[" + std::to_string(i) + "].";
      if (!l.is_object()) bad_field(p.substr(0, p.size() - 1), "an object", l);
      LayerRecord rec;
      read_int(l, "index", p, rec.index);
      read(l, "name", p, rec.name);
      read(l, "kind", p, rec.kind);
      read_strings(l, "sources", p, rec.sources);
      read(l, "kernel", p, rec.kernel);
      read(l, "precision", p, rec.precision);
      read(l, "precision_reason", p, rec.precision_reason);
      read_shapes(l, "input_shapes", p, rec.input_shapes);
      read_shapes(l, "output_shapes", p, rec.output_shapes);
      read(l, "flops", p, rec.flops);
      read(l, "bytes", p, rec.bytes);
      r.layers.push_back(std::move(rec));
    }
  }
  if (auto it = j.find("fusion_decisions"); it != j.end()) {
    try {
      it->get_to(r.fusion_decisions);
    } catch (const json::exception& e) {
      throw Error("field 'fusion_decisions': not a list of fusion decisions (" + std::string(e.what()) + ")");
    }
  }
  if (auto it = j.find("profile"); it != j.end() && !it->is_null()) {
    try {
      r.profile = it->get<Profile>();
    } catch (const json::exception& e) {
      throw Error("field 'profile': not a layer profile (" + std::string(e.what()) + ")");
    }
  }
  read(j, "profile_wall_ms", "", r.profile_wall_ms);
  if (auto it = j.find("plugin_cost"); it != j.end() && !it->is_null()) {
    try {
      r.plugin_cost = it->get<PluginCost>();
    } catch (const json::exception& e) {
      throw Error("field 'plugin_cost': not a plugin cost analysis (" + std::string(e.what()) + ")");
    }
  }
  return r;
}

}  // namespace

nlohmann::json case_result_to_json(const CaseResult& r) {
  json layers = json::array();
  for (const LayerRecord& l : r.layers)
    layers.push_back({{"index", l.index},
                      {"name", l.name},
                      {"kind", l.kind},
                      {"sources", l.sources},
                      {"kernel", l.kernel},
                      {"precision", l.precision},
                      {"precision_reason", l.precision_reason},
                      {"input_shapes", l.input_shapes},
                      {"output_shapes", l.output_shapes},
                      {"flops", number_or_null(l.flops)},
                      {"bytes", number_or_null(l.bytes)}});
  const Interference& in = r.interference;
  return {{"version", kCaseResultJsonVersion},
          {"spec", r.spec.to_json()},
          {"status", case_status_name(r.status)},
          {"error", r.error},
          {"engine", measurement_to_json(r.engine)},
          {"reference", measurement_to_json(r.reference)},
          {"accuracy",
           {{"max_abs_err", number_or_null(r.accuracy.max_abs_err)},
            {"max_rel_err", number_or_null(r.accuracy.max_rel_err)},
            {"cosine", number_or_null(r.accuracy.cosine)},
            {"passed", r.accuracy.passed},
            {"detail", r.accuracy.detail}}},
          {"speedup", number_or_null(r.speedup)},
          {"speedup_ci_low", number_or_null(r.speedup_ci_low)},
          {"speedup_ci_high", number_or_null(r.speedup_ci_high)},
          {"stop_reason", r.stop_reason},
          {"noisy", r.noisy},
          {"timer_overhead_ns", number_or_null(r.timer_overhead_ns)},
          {"interference",
           {{"load_before", number_or_null(in.load_before)},
            {"load_after", number_or_null(in.load_after)},
            {"other_cpu_ms", number_or_null(in.other_cpu_ms)},
            {"timed_wall_ms", number_or_null(in.timed_wall_ms)},
            {"cpu_mhz_before", number_or_null(in.cpu_mhz_before)},
            {"cpu_mhz_after", number_or_null(in.cpu_mhz_after)},
            {"steal_ms", number_or_null(in.steal_ms)},
            {"run_queue", in.run_queue},
            {"involuntary_switches", in.involuntary_switches}}},
          {"disturbed", r.disturbed},
          {"retimed_processes", r.retimed_processes},
          {"gpu", r.gpu ? json(*r.gpu) : json(nullptr)},
          {"process_noise",
           {{"processes", r.process_noise.processes},
            {"engine", number_or_null(r.process_noise.engine)},
            {"reference", number_or_null(r.process_noise.reference)},
            {"speedup", number_or_null(r.process_noise.speedup)}}},
          {"pinned_cpus", r.pinned_cpus},
          {"timed_on",
           {{"host", r.timed_on.host},
            {"cpu_model", r.timed_on.cpu_model},
            {"cpu_flags", r.timed_on.cpu_flags},
            {"cores", r.timed_on.cores}}},
          {"isolation", r.isolation},
          {"worker_lost", r.worker_lost},
          {"build_ms", number_or_null(r.build_ms)},
          {"specialize_ms", r.specialize_ms ? json(*r.specialize_ms) : json(nullptr)},
          {"engine_memory_bytes", r.engine_memory_bytes},
          {"reference_memory_bytes", r.reference_memory_bytes},
          {"onnx_nodes", r.onnx_nodes},
          {"build_log", r.build_log},
          {"layers", std::move(layers)},
          {"fusion_decisions", r.fusion_decisions},
          {"profile", r.profile ? json(*r.profile) : json(nullptr)},
          {"profile_wall_ms", r.profile_wall_ms},
          {"plugin_cost", r.plugin_cost ? json(*r.plugin_cost) : json(nullptr)}};
}

CaseResult case_result_from_json(const nlohmann::json& j) {
  try {
    return from_json_fields(j);
  } catch (const Error& e) {
    throw Error(std::string("case result: ") + e.what());
  }
}

}  // namespace fb
