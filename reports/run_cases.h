// A stored run's cases as every report renders them. The HTML report's model
// (reports/report_model.h) is built on it, export writes its rows from it, and JUnit renders
// the gate verdicts that the report model holds (GateReport, judged by evaluate_gate as
// `fusebench gate` judges): so the three key, order and figure a run's cases alike.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "harness/store/result_store.h"

namespace fb {

struct KeyedCase {
  StoredCase stored;
  std::string key;  // stored.result.spec.case_key(), computed once
};

struct RunCases {
  StoredRun run;
  std::vector<KeyedCase> cases;  // in stored order
};

// fb::Error naming the file when the run is absent.
RunCases load_run_cases(const ResultStore& store, int64_t run, CaseDetail detail = CaseDetail::kAll);

}  // namespace fb
