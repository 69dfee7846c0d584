// A load case (harness/load/load_settings.h) on a built engine: the pool of execution contexts
// sharing its weights, each on its own cores, warmed, the loop's own cost measured, then
// one run or, for a server peak search, a run per rate tried, every one kept.
#pragma once
#include <vector>

#include "engine/runtime/engine.h"
#include "harness/cases/case.h"
#include "harness/measure/timer.h"

namespace fb {

// The cores this process may run on (its affinity mask), in order.
std::vector<int> usable_cpus();

// Refuses a pool that does not fit this machine's cores (instances × threads), naming the
// field; `where` prefixes the message (the scenario file).
void check_pool_fits(const CaseSpec& spec, const std::string& where);

// Serves the case's load on `engine` with `inputs` (graph-input order, as Engine::run).
LoadResult serve_load(Engine& engine, const std::vector<Tensor>& inputs, const CaseSpec& spec,
                      const ProgressFn& progress = nullptr);

// A load case's engine measurement, for what reads every case alike (compare, history,
// export): the per-query latencies of its reported step (reported_step) as samples, in
// order; its rate as items per second. The reference is not timed under load.
void load_measurement(const LoadResult& load, CaseResult& r);

}  // namespace fb
