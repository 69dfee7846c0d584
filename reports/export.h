// Export of stored results as CSV or JSON for users' own dashboards: one row per case and
// executor, with documented, stable columns (docs/commands.md, "export"). New columns are
// only ever appended, so a dashboard reading columns by name or position keeps working.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "harness/store/result_store.h"

namespace fb {

// The column names, in order.
const std::vector<std::string>& export_columns();

enum class ExportFormat { kCsv, kJson };
ExportFormat parse_export_format(const std::string& name);  // "csv" or "json"; fb::Error otherwise

// Writes the rows of `runs` (every case, engine then reference), read as the report reads a
// run (reports/run_cases.h). CSV: a header line, then
// RFC 4180 fields (quoted when they hold a comma, quote or line break), numbers with 17
// significant digits, empty for a missing number. JSON: an array of objects keyed by column
// name, null for a missing number.
void export_runs(const ResultStore& store, const std::vector<int64_t>& runs, ExportFormat format, std::ostream& out);

}  // namespace fb
