// A case's per-layer profile (scenario "profile": {"iterations": N}): one profiled pass of
// the case's engine after its timing, as `fusebench profile` takes it (fused layers'
// time apportioned to their ONNX nodes by an unfused build of the same model), kept with
// the case with every layer's per-run times, so `fusebench explain` can say which layers
// and modules a change moved and put intervals on it. Also the JSON forms a worker
// process sends it and the build's fusion decisions in.
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/ir/graph.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/profiler.h"
#include "harness/cases/case.h"

namespace fb {

// Profiles `engine` (built from `graph` with `config`) over `iterations` runs on `inputs`.
// A fused build is apportioned by the same graph built with fusion none, as `profile` does.
// A pass the machine slowed, its layers' sum more than kProfileSlack times `timed_median_ms`
// (the engine's median just timed; 0: not known), is taken again, twice at most, and the
// pass with the smallest sum kept.
Profile profile_case(Engine& engine, const Graph& graph, const BuildConfig& config, const EngineKernels& kernels,
                     const std::vector<Tensor>& inputs, int iterations, double timed_median_ms);
// Undisturbed, the layers' sum lies within 0.95–0.99 of the engine's timed median (the
// nightly scenario's cases, docs/explain.md); another process on the cores moved it to 1.45.
constexpr double kProfileSlack = 1.2;

// The build's fusion events as a case stores them.
std::vector<FusionDecision> fusion_decisions_of(const Engine& engine);

void to_json(nlohmann::json& j, const Profile& p);
void from_json(const nlohmann::json& j, Profile& p);  // the module roll-up recomputed
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(FusionDecision, pass, root, nodes, fused, refused)

}  // namespace fb
