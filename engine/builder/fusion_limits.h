// Checks that every fusion limit names something in the model. A limit that matches
// nothing is almost always a typo or a model that changed, and silently building without
// it would time a different engine than the one asked for.
#pragma once
#include <string>
#include <vector>

#include "engine/config/build_config.h"
#include "engine/ir/graph.h"

namespace fb {

// Throws Error naming the field and the name for a partition point that is no tensor of
// the model, or an exact node name (no '*' or '?') that is no node. A glob or an op type
// that matches nothing is legal (one list of limits may serve several models) but gets a
// warning line in `log`.
void check_fusion_limits(const Graph& g, const BuildConfig& config, std::vector<std::string>* log);

}  // namespace fb
