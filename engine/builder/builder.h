// The builder: imported graph + BuildConfig → Engine. Binds the batch, runs the passes
// of the fusion level (engine/passes/pipeline.cpp), and writes the build log: the
// layer count after each pass, which pattern fired where, and each layer's sources.
#pragma once
#include <memory>

#include "engine/builder/build_config.h"
#include "engine/runtime/engine.h"

namespace fb {

std::unique_ptr<Engine> build_engine(const Graph& imported, const BuildConfig& config);

// The optimized graph without planning memory (for tests of passes).
Graph optimize_graph(const Graph& imported, const BuildConfig& config, std::vector<std::string>* log);

}  // namespace fb
