// The one interface every report format implements: HTML (reports/html_report.h), JUnit
// (reports/junit.h), CSV and JSON (reports/export.h). A reporter is shown a run of the
// report model (begin_run), then each of its cases in stored order (each_case), and at the
// end writes what it has to the stream it was made with. One model feeds them all, so they
// key, order and judge a run's cases alike.
#pragma once
#include <cstddef>

#include "reports/report_model.h"

namespace fb {

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void begin_run(const ReportModel& model) = 0;
  // model.cases[i]; model.gate.cases[i] is the gate's verdict on it where the gate judged the run.
  virtual void each_case(const ReportModel& model, size_t i) = 0;
  virtual void end() = 0;
};

// Shows `reporter` the run of `model` and each of its cases; the caller ends the reporter
// after its last run.
void show_run(Reporter& reporter, const ReportModel& model);

}  // namespace fb
