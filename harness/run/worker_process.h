// Timing a case in a fresh worker process: the runner starts `fusebench worker` (its own
// binary, /proc/self/exe) with the CaseSpec as JSON and reads back the CaseResult as JSON
// (harness/cases/case_json.h). A spawned and exec'd process, not a fork: each worker gets what a
// re-run gets — a new address space (ASLR), heap, page placement and thread pools — and a
// fork of the multi-threaded runner (oneTBB, OpenMP pools) would inherit its layout and
// could deadlock in the child. A worker that crashes, is killed or returns garbage costs
// that case, never the run.
#pragma once
#include <string>

#include "harness/cases/case.h"

namespace fb {

// The timing settings one of `processes` workers runs with: one process each, the time cap
// and the minimum iteration count shared out between them (at least 10 iterations each),
// and the per-process precision target widened by sqrt(processes), since the case's
// interval pools all of them. Warm-up is not shared: every process needs its own.
TimingConfig per_process_timing(const TimingConfig& t);

// Runs `spec` (whose timing is taken as given) in one worker process started from
// `executable` and returns its result. Never throws for the worker's sake: a worker that
// exits non-zero, dies of a signal or writes no readable result gives status "error" with
// a message naming the case, the process and what happened (with the worker's last
// stderr lines).
CaseResult run_in_worker_process(const CaseSpec& spec, int process_index, const std::string& executable);

// The worker side (`fusebench worker --spec FILE --out FILE`): reads the spec, runs the
// case in this process and writes the result. Returns the exit code.
int worker_main(const std::string& spec_path, const std::string& out_path, int process_index);

}  // namespace fb
