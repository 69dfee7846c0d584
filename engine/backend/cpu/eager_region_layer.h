// The engine's eager region (fusebench.EagerRegion, engine/ops/eager_region.cpp) on the CPU
// backend: its nodes run one by one as the op table's kernels run them, except float32
// convolutions over constant weights (a detector's RoI heads), which run on kernels kept
// from one run to the next per input shape: the weights reordered once, and oneDNN's
// Winograd kernels where they pay, as in the planned part of the engine.
#pragma once
#include <memory>

#include "engine/backend/backend.h"

namespace fb {

std::unique_ptr<Layer> make_eager_region_layer(const LayerRequest& request);

}  // namespace fb
