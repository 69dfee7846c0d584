// JUnit XML of a gate verdict, the format CI systems (GitLab, Jenkins, GitHub actions)
// display as test results: one test case per benchmark case, a failing rule as <failure>,
// an errored case as <error>, an inconclusive one as <skipped>.
#pragma once
#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "harness/judge/gate.h"
#include "reports/reporter.h"

namespace fb {

// A test suite per run it is shown, of the gate's verdicts on its cases (model.gate), written
// at the end under one <testsuites> with the totals.
class JUnitReporter : public Reporter {
 public:
  explicit JUnitReporter(std::ostream& out) : out_(out) {}
  void begin_run(const ReportModel& model) override;
  void each_case(const ReportModel& model, size_t i) override;
  void end() override;

 private:
  struct Suite {
    std::string name;
    int tests = 0, failures = 0, errors = 0, skipped = 0;
    std::string testcases;
  };
  std::ostream& out_;
  std::vector<Suite> suites_;
};

// The gate's verdict through JUnitReporter (a model of the verdict's cases: gate_model).
std::string render_junit(const GateReport& report);
// Writes through a temporary file, so CI never reads half a report; fb::Error naming the path.
void write_junit(const GateReport& report, const std::string& path);
// Escapes & < > " ' and drops characters XML 1.0 does not allow (control characters).
std::string xml_escape(const std::string& s);

}  // namespace fb
