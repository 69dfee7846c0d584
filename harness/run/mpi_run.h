// `mpirun -np N fusebench run ...`: rank 0 owns the run (it alone writes the database) and
// hands the cases out one at a time, longest first; every other rank builds and times what
// it is given and sends the result back as JSON (harness/cases/case_json.h). A worker that dies
// or hangs costs only its case, which is stored as lost (`run --resume` runs it again).
// Timing isolation is explicit and stored with each case: by default a host runs one case
// at a time ("host-exclusive"); --cores-per-worker K runs several workers per host, each
// pinned to its own K cores ("cores-per-worker=K").
#pragma once
#include <functional>
#include <optional>

#include "harness/run/run_loop.h"

namespace fb {

// How many ranks the launcher (mpirun, srun) started, when this process is one of them;
// read from the launcher's environment, so it works in a build without MPI too.
std::optional<int> launched_world_size();
bool built_with_mpi();

// One rank per GPU: in a process an MPI launcher started, a case asking for "cuda" runs on
// the GPU of the rank's place on its host, cuda:(local rank mod the GPUs it sees), so the
// workers of a host of N GPUs spread over them (rank 0 hands cases out and times none:
// start N + 1 ranks on the first host). "cpu" and an explicit "cuda:N" stay as asked, and
// so does everything outside a launcher. The case keeps "cuda" in its key; its stored GPU
// record (UUID) says which one ran it.
std::string device_for_this_rank(const std::string& device);
// The rule itself: `local_rank` < 0 when not launched.
std::string device_for_local_rank(const std::string& device, int local_rank, int gpus);

struct DistributedOptions {
  int cores_per_worker = 0;   // 0: one case per host at a time; K: workers pinned to disjoint K-core sets
  double case_timeout_s = 0;  // no result this long after a case was handed out: lost (0: 600 s + 4 x timing.max_seconds)
};

// Runs `request` over the ranks of MPI_COMM_WORLD. On rank 0, `finish` closes the session
// (finish, report, summary) and gives the exit code; on the others it is not called.
// Throws fb::Error on rank 0 for bad input (after telling the workers to stop), or when
// this build has no MPI.
int run_distributed(const RunRequest& request, const DistributedOptions& options,
                    const std::function<int(RunSession&)>& finish);

}  // namespace fb
