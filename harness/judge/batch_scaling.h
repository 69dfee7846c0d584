// The batch question ("why 2.5x at batch 1 but 1.6x at batch 8?"), answered from profiles
// of one engine at several batches: per layer, its time against batch, and what limits it
// at each batch against the machine's measured peaks (MachinePeaks: a CPU's, or a GPU's
// on its own clock):
//
//   compute   its arithmetic takes at least kNearRoof of its time at the matrix rate
//   memory    its bytes take at least kNearRoof of its time at the copy bandwidth
//   launch    neither, and its time grows less than half as fast as the batch: a fixed
//             cost per run (a kernel launch, a library call's host work, a thread pool's
//             wake-up) dominates, which fusion removes and batching amortizes
//   kernel    neither, yet its time grows with the batch: the kernel itself is far from
//             the hardware's limits
//
// Shares of these classes per batch, for the engine and for the same model built
// unfused beside it, say where a speedup goes as the batch grows.
#pragma once
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/runtime/profiler.h"

namespace fb {

inline constexpr double kNearRoof = 0.25;

enum class Limit { Compute, Memory, Launch, Kernel };
const char* limit_name(Limit l);  // "compute", "memory", "launch", "kernel"

struct LayerScaling {
  std::string name, kind;
  std::vector<double> ms;        // per batch (0: the layer is absent at that batch)
  std::vector<double> of_roof;   // per batch: the larger floor (compute or memory) over the time
  std::vector<Limit> limit;      // per batch
  double growth = 0;             // time at the largest batch over time at the smallest
};

struct BatchScaling {
  std::vector<int64_t> batches;  // ascending
  std::vector<double> total_ms;  // the engine's sum of layer medians, per batch
  std::vector<double> unfused_ms;  // the same model built unfused, per batch (0: not profiled)
  // Per batch, the engine's time in each class (index: Limit), as shares of total_ms.
  std::vector<std::vector<double>> share;
  std::vector<LayerScaling> layers;  // in the largest batch's layer order
};

// `profiles[i]` is the engine's profile at `batches[i]` (ascending, at least two);
// `unfused_ms[i]` the unfused build's total at that batch (or 0). Layers are matched by name.
BatchScaling analyze_batch_scaling(const std::vector<int64_t>& batches, const std::vector<Profile>& profiles,
                                   const std::vector<double>& unfused_ms, const MachinePeaks& peaks);

// The table `profile --batch-sweep` prints: totals and class shares per batch, then the
// `top` layers by time at the largest batch with their time at every batch and limit.
std::string format_batch_scaling(const BatchScaling& s, int top);

}  // namespace fb
