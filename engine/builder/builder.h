// The builder: imported graph + BuildConfig → Engine. Binds the batch, runs the passes
// of the fusion level (engine/passes/pipeline.cpp), and writes the build log: the
// layer count after each pass, which pattern fired where, and each layer's sources.
#pragma once
#include <memory>

#include "engine/config/build_config.h"
#include "engine/runtime/engine.h"

namespace fb {

// `kernels`: the engine's op registry (sealed) and backend; by default the shipped ops on the CPU.
std::unique_ptr<Engine> build_engine(const Graph& imported, const BuildConfig& config, EngineKernels kernels = {});

// The optimized graph without planning memory (for tests of passes).
// `events`, when given, receives what the fusion passes did; `backend`, which precisions the
// layers can run in (nullptr: the CPU backend's).
Graph optimize_graph(const Graph& imported, const BuildConfig& config, std::vector<std::string>* log,
                     const OpRegistry& ops = *OpRegistry::builtin(), std::vector<FusionEvent>* events = nullptr,
                     const Backend* backend = nullptr);

}  // namespace fb
