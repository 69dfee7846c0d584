// What differs between the environments of two runs: the fingerprint (commit, compiler,
// libraries, CPU, kernel), the GPUs their cases ran on, and the machine's load, field by
// field. The report's environment table and `fusebench explain` both show it.
#pragma once
#include <string>
#include <vector>

#include "harness/measure/environment.h"

namespace fb {

struct EnvField {
  std::string name, value, baseline_value;
  bool differs = false;
};

// The fields of run `a`'s fingerprint beside `b`'s (null: no baseline, nothing differs);
// loads as median_load gives them, GPUs as gpu_setups.
std::vector<EnvField> environment_fields(const RunInfo& a, double load_a, const RunInfo* b, double load_b,
                                         const std::string& gpus_a, const std::string& gpus_b);

// The median 1-minute load when the cases started timing; NaN when unread.
double median_load(const std::vector<const CaseResult*>& cases);

// The setups of the GPUs the cases ran on, "; " between two ("" on the CPU).
std::string gpu_setups(const std::vector<const CaseResult*>& cases);

}  // namespace fb
