// Every graph pass, one per file, and the pipeline that says which run at each fusion
// level and in what order (pipeline.cpp).
#pragma once
#include <vector>

#include "engine/passes/pass.h"

namespace fb {

int precision_assignment(PassContext& ctx);
int identity_elimination(PassContext& ctx);
int constant_folding(PassContext& ctx);
int dead_node_elimination(PassContext& ctx);
int layernorm_fusion(PassContext& ctx);
int gelu_fusion(PassContext& ctx);
int gelu_tanh_fusion(PassContext& ctx);
int residual_layernorm_fusion(PassContext& ctx);
int matmul_bias_activation_fusion(PassContext& ctx);
int elementwise_chain_fusion(PassContext& ctx);
int attention_fusion(PassContext& ctx);
int batchnorm_folding(PassContext& ctx);
int conv_activation_fusion(PassContext& ctx);
int conv_residual_fusion(PassContext& ctx);
int conv_layout_propagation(PassContext& ctx);

// The passes for a fusion level, in order.
std::vector<Pass> passes_for(FusionLevel level);

}  // namespace fb
