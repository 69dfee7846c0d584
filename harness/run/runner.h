// Runs one case end to end: load the model, build the engine, check its outputs against
// the reference executor on the same seeded inputs, then time both side by side.
// Bad input never escapes as an exception: it becomes a case with status "error".
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "harness/cases/case.h"
#include "harness/cases/model_source.h"
#include "harness/measure/timer.h"

namespace fb {

class CaseRunner {
 public:
  // `worker_executable`: the fusebench binary that times a case with timing.processes > 1
  // (harness/run/worker_process.h); the running binary itself unless told otherwise (tests,
  // whose own binary is not fusebench).
  explicit CaseRunner(std::string worker_executable = "/proc/self/exe")
      : worker_executable_(std::move(worker_executable)) {}

  // Runs the case: in this process when timing.processes is 1, else once in each of that
  // many fresh worker processes, one after another, merged into one result
  // (harness/measure/process_merge.h). Models are loaded once per reference and reused across cases.
  CaseResult run(const CaseSpec& spec, const ProgressFn& progress = nullptr);

  // A paired A/B case (`run --against OTHER`): the case timed in worker processes of this
  // binary (the candidate) and of `other` (the baseline) in ABBA order, process k of each
  // side next to the other's, so both sides share the machine's drift pair by pair. A pair
  // one of whose sides was disturbed is timed again as a pair. The baseline side never gets
  // the test hook's inject_delay_us. Returns {candidate, baseline}, each merged over its
  // processes and stored under the candidate's spec (one case key for both).
  std::pair<CaseResult, CaseResult> run_paired(const CaseSpec& spec, const std::string& other,
                                               const ProgressFn& progress = nullptr);
  // The model for a reference (loaded on first use); throws Error on bad input.
  const LoadedModel& model(const std::string& reference);

 private:
  CaseResult run_here(const CaseSpec& spec, const ProgressFn& progress);
  CaseResult run_in_workers(const CaseSpec& spec, const ProgressFn& progress);

  std::string worker_executable_;
  std::map<std::string, std::unique_ptr<LoadedModel>> models_;
  std::optional<HostFingerprint> host_;  // read once: it does not change under a run
};

}  // namespace fb
