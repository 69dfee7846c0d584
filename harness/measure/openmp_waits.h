// How the OpenMP threads of the worker processes wait between parallel regions. fusebench
// starts with passive waits after a short spin (harness/cli/main.cpp): the spin bridges
// oneDNN's back-to-back primitives on a quiet machine. On a machine whose other processes
// hold a core the case's threads need, the same spin is the batch-1 slow mode of
// docs/performance.md: a spinning thread waits for one that is descheduled (resnet18 at
// batch 1, 2 threads, one busy loop: 54-55 ms with the spin, 24 ms without, 12 ms quiet).
#pragma once
#include <string>

namespace fb {

// Set by main.cpp beside OMP_WAIT_POLICY and GOMP_SPINCOUNT when it chose them; a user's
// own settings come without it and are never changed.
inline constexpr const char* kOpenmpWaitsEnv = "FUSEBENCH_OPENMP_WAITS";

// For `run` on a machine already too busy for its cases' threads, before any worker
// starts: where the waits are fusebench's own, the workers' threads will not spin
// (GOMP_SPINCOUNT=0, inherited by both binaries of a paired run). Returns the sentence that
// says so, "" when the waits were left as they are (the user's).
std::string stop_openmp_spin_for_busy_machine();

// The waits worker processes start with, as stored with a run: "OMP_WAIT_POLICY=PASSIVE
// GOMP_SPINCOUNT=10000", or "OpenMP defaults" when neither is set.
std::string openmp_waits();

}  // namespace fb
