// The activations fused nodes apply (engine/ops/fused_activation.h reads them from a node),
// in a header of its own so device code (engine/backend/cuda/*.cu) can switch on them.
#pragma once

namespace fb {

enum class ActivationKind : int { None, Relu, Clip, Sigmoid, HardSwish, Silu, Gelu, GeluTanh };

}  // namespace fb
