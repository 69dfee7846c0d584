#include "harness/cases/case_status.h"

#include "engine/ir/error.h"

namespace fb {

const char* case_status_name(CaseStatus s) {
  switch (s) {
    case CaseStatus::kPassed: return "passed";
    case CaseStatus::kFailed: return "failed";
    case CaseStatus::kError: return "error";
  }
  return "error";
}

CaseStatus parse_case_status(std::string_view name, const std::string& where) {
  for (CaseStatus s : {CaseStatus::kPassed, CaseStatus::kFailed, CaseStatus::kError})
    if (name == case_status_name(s)) return s;
  throw Error(where + ": case status '" + std::string(name) + "' is not one of passed, failed, error");
}

}  // namespace fb
