#include "reports/export.h"

#include <charconv>
#include <cmath>

#include <nlohmann/json.hpp>

#include "engine/ir/error.h"
#include "harness/cases/case_fields.h"
#include "reports/run_cases.h"

namespace fb {
namespace {

using Row = nlohmann::ordered_json;  // keeps the documented column order

Row make_row(const StoredRun& run, const KeyedCase& c, const char* executor, const Measurement& m) {
  const CaseResult& r = c.stored.result;
  const CaseSpec& s = r.spec;
  const SampleStats& st = m.stats;
  Row row;
  row["run"] = run.id;
  row["started_at"] = run.info.started_at;
  row["case_key"] = c.key;
  row["scenario"] = s.scenario;
  row["model"] = s.model;
  // The case's settings as the case table places them (harness/cases/case_fields.h:
  // export_place): those of the first format before the statistics, later ones appended.
  const std::vector<const CaseField*>& settings = exported_fields();
  for (int i = 0; i < kExportPlacesBeforeStatistics; ++i) row[settings[i]->path] = export_value(*settings[i], s);
  row["executor"] = executor;
  row["samples"] = st.n;
  row["median_ms"] = st.median;
  row["p90_ms"] = st.p90;
  row["p95_ms"] = st.p95;
  row["p99_ms"] = st.p99;
  row["mean_ms"] = st.mean;
  row["min_ms"] = st.min;
  row["max_ms"] = st.max;
  row["stddev_ms"] = st.stddev;
  row["cv"] = st.cv;
  row["ci_low_ms"] = st.ci_low;
  row["ci_high_ms"] = st.ci_high;
  row["items_per_s"] = m.items_per_s;
  row["first_iteration_ms"] = m.first_iteration_ms;
  row["minor_faults_per_iter"] = m.minor_faults.mean;
  row["major_faults_per_iter"] = m.major_faults.mean;
  row["speedup"] = r.speedup;
  row["speedup_ci_low"] = r.speedup_ci_low;
  row["speedup_ci_high"] = r.speedup_ci_high;
  row["max_abs_err"] = r.accuracy.max_abs_err;
  row["noisy"] = r.noisy;
  row["stop_reason"] = r.stop_reason;
  row["status"] = case_status_name(r.status);
  for (size_t i = kExportPlacesBeforeStatistics; i < settings.size(); ++i) row[settings[i]->path] = export_value(*settings[i], s);
  return row;
}

std::string csv_field(const Row& v) {
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d)) return "";
    char buf[40];
    const auto end = std::to_chars(buf, buf + sizeof buf, d).ptr;  // the shortest text that reads back exactly
    return std::string(buf, end);
  }
  if (v.is_boolean()) return v.get<bool>() ? "1" : "0";
  if (v.is_number()) return v.dump();
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

const std::vector<std::string>& export_columns() {
  // Read off a row, so the list and the rows cannot disagree.
  static const std::vector<std::string> columns = [] {
    const Row row = make_row(StoredRun{}, KeyedCase{}, "engine", Measurement{});
    std::vector<std::string> names;
    for (auto it = row.begin(); it != row.end(); ++it) names.push_back(it.key());
    return names;
  }();
  return columns;
}

ExportFormat parse_export_format(const std::string& name) {
  if (name == "csv") return ExportFormat::kCsv;
  if (name == "json") return ExportFormat::kJson;
  throw Error("--format must be csv or json, got '" + name + "'");
}

void ExportReporter::start() {
  if (started_) return;
  started_ = true;
  if (format_ == ExportFormat::kCsv) {
    const auto& cols = export_columns();
    for (size_t i = 0; i < cols.size(); ++i) out_ << (i ? "," : "") << cols[i];
    out_ << "\r\n";  // RFC 4180 line ends
  } else {
    out_ << "[";
  }
}

void ExportReporter::begin_run(const ReportModel&) { start(); }

void ExportReporter::each_case(const ReportModel& model, size_t i) {
  const KeyedCase& c = model.cases[i];
  for (auto [executor, m] : {std::pair<const char*, const Measurement*>{"engine", &c.stored.result.engine},
                             {"reference", &c.stored.result.reference}}) {
    Row row = make_row(model.run, c, executor, *m);
    if (format_ == ExportFormat::kCsv) {
      bool first_field = true;
      for (const auto& [key, value] : row.items()) {
        out_ << (first_field ? "" : ",") << csv_field(value);
        first_field = false;
      }
      out_ << "\r\n";
    } else {
      // nlohmann writes NaN and infinities as null, which is what "no number" means here.
      out_ << (first_row_ ? "\n  " : ",\n  ") << row.dump(-1, ' ', false, Row::error_handler_t::replace);
    }
    first_row_ = false;
  }
}

void ExportReporter::end() {
  start();  // no runs: still the header, or an empty array
  if (format_ == ExportFormat::kJson) out_ << (first_row_ ? "]\n" : "\n]\n");
}

void export_runs(const ResultStore& store, const std::vector<int64_t>& runs, ExportFormat format, std::ostream& out) {
  ExportReporter reporter(format, out);
  for (int64_t id : runs) {
    // One run in memory at a time; summary figures, as export needs no samples.
    show_run(reporter, cases_model(load_run_cases(store, id, CaseDetail::kSummary)));
  }
  reporter.end();
}

}  // namespace fb
