// Runs one case end to end: load the model, build the engine, check its outputs against
// the reference executor on the same seeded inputs, then time both side by side.
// Bad input never escapes as an exception: it becomes a case with status "error".
#pragma once
#include <map>
#include <memory>
#include <optional>

#include "harness/case.h"
#include "harness/model_source.h"
#include "harness/timer.h"

namespace fb {

class CaseRunner {
 public:
  // Runs the case; models are loaded once per reference and reused across cases.
  CaseResult run(const CaseSpec& spec, const ProgressFn& progress = nullptr);
  // The model for a reference (loaded on first use); throws Error on bad input.
  const LoadedModel& model(const std::string& reference);

 private:
  std::map<std::string, std::unique_ptr<LoadedModel>> models_;
  std::optional<HostFingerprint> host_;  // read once: it does not change under a run
};

}  // namespace fb
