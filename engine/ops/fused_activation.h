// The activation a fused node applies to its product: FusedConv's and FusedMatMul's
// "activation" attribute, with Clip's bounds in "activation_min"/"activation_max". The
// fusion passes write it; every backend reads it through this one table.
#pragma once
#include <string>

#include "engine/ir/graph.h"
#include "engine/ops/activation_kind.h"

namespace fb {

struct FusedActivation {
  ActivationKind kind = ActivationKind::None;
  float lo = 0, hi = 0;  // Clip's bounds
};

// "" or "none", "relu", "clip", "sigmoid", "hardswish", "silu", "gelu", "gelu_tanh";
// Error naming `where` and listing the names for any other.
ActivationKind parse_activation_kind(const std::string& name, const std::string& where);
const char* activation_kind_name(ActivationKind kind);  // "none" for None
// The node's activation; Error naming the node for an unknown one.
FusedActivation fused_activation_of(const Node& n);

}  // namespace fb
