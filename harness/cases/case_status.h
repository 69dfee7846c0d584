// How a case ended: the one word every command, the store and the report agree on. Code
// compares the enum; the names below are what the store's status column, the case JSON and
// the terminal hold, read and written only at those edges.
#pragma once
#include <ostream>
#include <string>
#include <string_view>

namespace fb {

enum class CaseStatus {
  kPassed,  // ran, and both executors agreed within the tolerances
  kFailed,  // ran, and the outputs disagreed (accuracy)
  kError,   // did not run to the end: CaseResult::error says why
};

const char* case_status_name(CaseStatus s);  // "passed", "failed", "error"
// The status a name stands for; an Error naming `where` for any other word.
CaseStatus parse_case_status(std::string_view name, const std::string& where);

inline std::ostream& operator<<(std::ostream& o, CaseStatus s) { return o << case_status_name(s); }

}  // namespace fb
