// The self-contained HTML report of one stored run, rendered from the report data model
// (report_model.h): verdicts first (gate, regressions and improvements against the
// baseline with their noise, noisy cases), the environment beside the baseline's, then per
// case its history with change points, speedup against batch, latency distributions,
// accuracy and the engine view. One file: CSS, script and SVG charts inline, no external
// resource, no network request; it can be mailed, archived or attached to CI.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/store/result_store.h"
#include "reports/report_model.h"
#include "reports/reporter.h"

namespace fb {

// The page of one run: its head, verdicts and environment when the run begins, each case's
// section as the case is shown (under its scenario, in the order scenarios were first
// stored), and the scenarios' tables, the runs and the chart data at the end.
class HtmlReporter : public Reporter {
 public:
  explicit HtmlReporter(std::ostream& out) : out_(out) {}
  void begin_run(const ReportModel& model) override;  // fb::Error when shown a second run
  void each_case(const ReportModel& model, size_t i) override;
  void end() override;

 private:
  std::ostream& out_;
  const ReportModel* model_ = nullptr;
  std::ostringstream page_;                          // written to out_ at the end
  std::vector<std::string> scenarios_;               // in the order their first case was stored
  std::map<std::string, size_t> scenario_index_;
  std::vector<std::vector<size_t>> scenario_cases_;  // per scenario, the cases shown
  std::vector<std::ostringstream> case_sections_;    // per scenario, their sections
};

// The page through HtmlReporter.
std::string render_html_report(const ReportModel& model);
// Builds the model with default options for one run (default: the latest run) and renders
// it. fb::Error when the store has no runs or the run is absent.
std::string render_html_report(const ResultStore& store, std::optional<int64_t> run_id = std::nullopt);
// Renders and writes to out_path (through a temporary file, so a failure never leaves a
// half-written report); fb::Error naming out_path if it cannot write.
void write_html_report(const ReportModel& model, const std::string& out_path);
void write_html_report(const ResultStore& store, const std::string& out_path,
                       std::optional<int64_t> run_id = std::nullopt);

// Escapes & < > " ' for use in HTML (and SVG) text and attribute values.
std::string html_escape(std::string_view s);
// JSON text safe inside <script type="application/json">: < > & and U+2028/U+2029 written as
// \u escapes, so no stored name can close the element or open a comment; invalid UTF-8 is
// replaced, never passed through.
std::string json_for_script(const nlohmann::json& j);

}  // namespace fb
