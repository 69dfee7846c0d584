// The one table of passes per fusion level. Order matters:
//  1. constant folding first, so later patterns see initializers where the model had
//     Constant nodes or shape arithmetic;
//  2. LayerNorm and GELU before MatMul+bias fusion, so a MatMul followed by the GELU
//     subgraph can absorb it as one activation (the GELU node must exist to match);
//  3. elementwise chains last: they take whatever arithmetic the named patterns left.
#include "engine/passes/passes.h"

namespace fb {

std::vector<Pass> passes_for(FusionLevel level) {
  switch (level) {
    case FusionLevel::None:
      return {};  // one engine layer per ONNX node
    case FusionLevel::Standard:
      return {
          {"constant-folding", constant_folding},
          {"layernorm-fusion", layernorm_fusion},
          {"gelu-fusion", gelu_fusion},
          {"matmul-bias-activation-fusion", matmul_bias_activation_fusion},
          {"elementwise-chain-fusion", elementwise_chain_fusion},
      };
  }
  return {};
}

}  // namespace fb
