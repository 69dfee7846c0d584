#include "reports/run_cases.h"

namespace fb {

RunCases load_run_cases(const ResultStore& store, int64_t run, CaseDetail detail) {
  RunCases out;
  out.run = store.load_run(run);
  for (StoredCase& sc : store.load_cases(run, detail)) {
    std::string key = sc.result.spec.case_key();
    out.cases.push_back({std::move(sc), std::move(key)});
  }
  return out;
}

}  // namespace fb
