// One case timed in several worker processes becomes one CaseResult: every sample kept with
// the index of the process that took it, statistics over all of them, and intervals from
// the hierarchical bootstrap (processes, then samples within each), so a stored interval
// says what a re-run in fresh processes would show. The spread between the processes is
// kept as the case's process noise, which compare and gate judge changes against.
#pragma once
#include <vector>

#include "harness/cases/case.h"

namespace fb {

// Merges the results of one case's workers, in process order (parts[p] from process p,
// each timed in one process). The first part that errored is the result (an error in
// the case itself, or a worker that failed, whose message names the process). Figures that belong to the build or the check (build
// log, layers, memory, accuracy) come from process 0; accuracy fails if any process failed.
// A GPU case keeps the GPU readings of its worst process (merge_gpu_environments).
CaseResult merge_process_results(const std::vector<CaseResult>& parts);

// What each worker process says of an executor's time, in process order: the 5th percentile
// of its samples, its time when undisturbed. Interference only ever adds time, so a low
// quantile moves with the code and far less with the neighbours than the median does (A/A
// runs of the quickstart on a 2-core VM: docs/measurement.md, "Trusting a comparison"). Empty when the
// samples carry no process indices (one process).
std::vector<double> process_floors(const Measurement& m);

// The process noise of a result whose samples carry process indices: the robust spread
// (robust_log_spread) of each executor's process floors and of each process's own speedup
// (reference floor / engine floor), the figures compare judges.
ProcessNoise process_noise_of(const CaseResult& r);

// Recomputes a merged measurement's statistics from its samples: the ordinary summary
// over all samples, with the median's bootstrap interval replaced by the hierarchical one.
void finish_merged_measurement(Measurement& m, int64_t batch);

}  // namespace fb
