// The reporter interface (reports/reporter.h) beyond what one run's output shows: several
// runs through one reporter, and what a reporter does when shown no run or too many.
#include "reports/reporter.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "engine/ir/error.h"
#include "reports/export.h"
#include "reports/html_report.h"
#include "reports/junit.h"

namespace {

fb::CaseVerdict verdict(const std::string& key, fb::Outcome outcome, fb::CaseStatus status = fb::CaseStatus::kPassed) {
  fb::CaseVerdict v;
  v.case_key = key;
  v.result.spec.scenario = "s";
  v.result.status = status;
  v.result.engine.stats.median = 2.5;  // ms: JUnit's time is 0.002500 s
  v.outcome = outcome;
  v.rules.push_back({"min_speedup", outcome, "speedup 1.20x vs min 1.50x"});
  return v;
}

fb::GateReport gate(int64_t run, std::vector<fb::CaseVerdict> cases) {
  fb::GateReport g;
  g.run_id = run;
  g.cases = std::move(cases);
  return g;
}

TEST(Reporter, JunitShowsEachRunAsATestSuiteUnderTheirTotals) {
  std::ostringstream out;
  fb::JUnitReporter reporter(out);
  fb::show_run(reporter, fb::gate_model(gate(3, {verdict("a", fb::Outcome::kPass), verdict("b", fb::Outcome::kFail)})));
  fb::show_run(reporter, fb::gate_model(gate(4, {verdict("c", fb::Outcome::kInconclusive),
                                                 verdict("d", fb::Outcome::kFail, fb::CaseStatus::kError)})));
  reporter.end();
  const std::string xml = out.str();
  EXPECT_NE(xml.find("<testsuites name=\"fusebench gate\" tests=\"4\" failures=\"1\" errors=\"1\" skipped=\"1\">\n"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("  <testsuite name=\"fusebench gate (run 3)\" tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"0\">\n"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("  <testsuite name=\"fusebench gate (run 4)\" tests=\"2\" failures=\"0\" errors=\"1\" skipped=\"1\">\n"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("time=\"0.002500\""), std::string::npos) << xml;
  // One run: the same document render_junit writes for that run's verdict.
  std::ostringstream one;
  fb::JUnitReporter single(one);
  const fb::GateReport g = gate(3, {verdict("a", fb::Outcome::kPass), verdict("b", fb::Outcome::kFail)});
  fb::show_run(single, fb::gate_model(g));
  single.end();
  EXPECT_EQ(one.str(), fb::render_junit(g));
}

TEST(Reporter, ExportShownNoRunWritesTheHeaderAlone) {
  std::ostringstream csv, json;
  fb::ExportReporter to_csv(fb::ExportFormat::kCsv, csv), to_json(fb::ExportFormat::kJson, json);
  to_csv.end();
  to_json.end();
  std::string header;
  for (const std::string& c : fb::export_columns()) header += (header.empty() ? "" : ",") + c;
  EXPECT_EQ(csv.str(), header + "\r\n");
  EXPECT_EQ(json.str(), "[]\n");
}

TEST(Reporter, HtmlShowsOneRunAndNeedsOne) {
  std::ostringstream out;
  fb::HtmlReporter reporter(out);
  EXPECT_THROW(reporter.end(), fb::Error);
  fb::ReportModel model = fb::cases_model(fb::RunCases{});
  model.history_runs = {model.run};  // as build_report_model has it: the runs ending with this one
  fb::show_run(reporter, model);
  EXPECT_THROW(reporter.begin_run(model), fb::Error);
  reporter.end();
  EXPECT_NE(out.str().find("This run has no stored cases."), std::string::npos);
  EXPECT_EQ(out.str(), fb::render_html_report(model));
}

}  // namespace
