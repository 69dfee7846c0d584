// The one table of passes per fusion level. Order matters:
//  0. precision assignment heads every level, none included: each node's precision is
//     decided before anything fuses, so fusion only joins nodes that agree;
//  1. Identity/Dropout elimination, constant folding and dead-node elimination first, so
//     later patterns see direct edges, and initializers where the model had Constant
//     nodes or shape arithmetic; then BatchNorm folding, so that the Conv it leaves
//     behind can take the activation that follows the BatchNorm; a zero Pad into the Conv
//     or AveragePool after it (before Conv fusions, which take Conv nodes), and a spatial
//     ReduceMean as the GlobalAveragePool the layouts know; a softmax's Where mask
//     (constant after folding) becomes the additive mask attention fusion and elementwise
//     chains take;
//  2. GELU (both forms) before Conv+activation and MatMul+bias fusion, so a Conv or MatMul
//     followed by the GELU subgraph can absorb it as one activation (the GELU node must
//     exist to match); LayerNorm and GroupNorm (whose SiLU the elementwise chains would
//     otherwise take) before MatMul+bias fusion;
//  3. attention (aggressive only) after MatMul+bias fusion: the Q/K/V projections must
//     already be single layers whose outputs the attention layer reads through strides;
//  4. residual Add + LayerNorm after MatMul+bias fusion, so the bias Adds are gone and the
//     Adds left are residuals; the LayerNorm node must exist;
//  5. elementwise chains last: they take whatever arithmetic the named patterns left.
//  Conv: residual Add(+Relu) right after Conv+activation fusion (a Conv that took an
//  activation cannot take a sum after it) and before elementwise chains would take the Add;
//  channels-last layouts last, once the graph's structure is final.
//  none and mark-all run no fusion pass (mark-all: every tensor is an output, so nothing
//  could fuse anyway). Every level starts with precision assignment (each node's precision
//  is known before anything fuses, and can_fuse joins only nodes that agree) and ends with
//  precision lowering (16-bit tensor types, Convert layers at the boundaries, fallbacks),
//  once the layers are final; a build for a device then places each layer on it or, where
//  it has no kernel, on the CPU with copies between (device placement).
#include "engine/passes/passes.h"

#include "engine/backend/backend.h"

namespace fb {

std::vector<Pass> passes_for(FusionLevel level, const Backend* backend) {
  std::vector<Pass> passes{{"precision-assignment", precision_assignment}};
  switch (level) {
    case FusionLevel::None:
    case FusionLevel::MarkAll:  // one engine layer per ONNX node
      // ...that computes data: on a device, values known at build time (Constant nodes, the
      // Shape→Gather→Concat chains exporters write, which PyTorch eager computes on the
      // host as Python numbers) are folded, and each remaining node is one kernel launch.
      if (backend && backend->device() != Device::Host)
        passes.insert(passes.end(), {{"constant-folding", constant_folding}, {"dead-node-elimination", dead_node_elimination}});
      passes.push_back({"precision-lowering", precision_lowering});
      break;
    case FusionLevel::Standard:
    case FusionLevel::Aggressive: {
      const bool aggressive = level == FusionLevel::Aggressive;
      passes.insert(passes.end(), {
          {"identity-elimination", identity_elimination},
          {"constant-folding", constant_folding},
          {"dead-node-elimination", dead_node_elimination},
          {"batchnorm-folding", batchnorm_folding},
          {"pad-fusion", pad_fusion},
          {"spatial-mean-pooling", spatial_mean_pooling},
          {"where-mask", where_mask_fusion},
          {"gelu-fusion", gelu_fusion},
          {"gelu-tanh-fusion", gelu_tanh_fusion},
          {"conv-activation-fusion", conv_activation_fusion},
          {"conv-residual-fusion", conv_residual_fusion},
          {"layernorm-fusion", layernorm_fusion},
          {"group-norm-fusion", group_norm_fusion},
          {"matmul-bias-activation-fusion", matmul_bias_activation_fusion},
          {"gated-matmul-fusion", gated_matmul_fusion},
          {"channel-shuffle", channel_shuffle_fusion},
      });
      if (aggressive) passes.push_back({"attention-fusion", attention_fusion});
      passes.push_back({"residual-layernorm-fusion", residual_layernorm_fusion});
      passes.push_back({"elementwise-chain-fusion", elementwise_chain_fusion});
      passes.push_back({"conv-layout", conv_layout_propagation});
      passes.push_back({"precision-lowering", precision_lowering});
      break;
    }
  }
  if (backend && backend->device() != Device::Host) passes.push_back({"device-placement", device_placement});
  return passes;
}

}  // namespace fb
