// Export of stored results as CSV or JSON for users' own dashboards: one row per case and
// executor, with documented, stable columns (docs/commands.md, "export"). New columns are
// only ever appended, so a dashboard reading columns by name or position keeps working.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "harness/store/result_store.h"
#include "reports/reporter.h"

namespace fb {

// The column names, in order.
const std::vector<std::string>& export_columns();

enum class ExportFormat { kCsv, kJson };
ExportFormat parse_export_format(const std::string& name);  // "csv" or "json"; fb::Error otherwise

// Writes a row per case and executor (engine then reference) of every run it is shown, as
// the rows arrive. CSV: a header line, then RFC 4180 fields (quoted when they hold a comma,
// quote or line break), numbers as the shortest text that reads back exactly, empty for a
// missing number. JSON: an array of objects keyed by column name, null for a missing number.
class ExportReporter : public Reporter {
 public:
  ExportReporter(ExportFormat format, std::ostream& out) : format_(format), out_(out) {}
  void begin_run(const ReportModel& model) override;
  void each_case(const ReportModel& model, size_t i) override;
  void end() override;

 private:
  void start();  // the CSV header or the JSON array's opening, once

  ExportFormat format_;
  std::ostream& out_;
  bool started_ = false;
  bool first_row_ = true;
};

// The rows of `runs`, each read as the report reads a run (reports/run_cases.h), through
// ExportReporter.
void export_runs(const ResultStore& store, const std::vector<int64_t>& runs, ExportFormat format, std::ostream& out);

}  // namespace fb
