// Every graph pass, one per file, and the pipeline that says which run at each fusion
// level and in what order (pipeline.cpp).
#pragma once
#include <vector>

#include "engine/passes/pass.h"

namespace fb {

int precision_assignment(PassContext& ctx);
int precision_lowering(PassContext& ctx);
int identity_elimination(PassContext& ctx);
int constant_folding(PassContext& ctx);
int dead_node_elimination(PassContext& ctx);
int layernorm_fusion(PassContext& ctx);
// Whether `n` is ONNX LayerNormalization over the last axis with only Y read and scale
// (and bias, if any) of length h; their names into gamma/beta. Shared by the LayerNorm
// fusions.
bool onnx_last_axis_layernorm(const Graph& g, const Node& n, int64_t h, std::string* gamma, std::string* beta);
int gelu_fusion(PassContext& ctx);
int gelu_tanh_fusion(PassContext& ctx);
int residual_layernorm_fusion(PassContext& ctx);
int matmul_bias_activation_fusion(PassContext& ctx);
int gated_matmul_fusion(PassContext& ctx);
int elementwise_chain_fusion(PassContext& ctx);
int attention_fusion(PassContext& ctx);
int where_mask_fusion(PassContext& ctx);
int channel_shuffle_fusion(PassContext& ctx);
int batchnorm_folding(PassContext& ctx);
int pad_fusion(PassContext& ctx);
int spatial_mean_pooling(PassContext& ctx);
int group_norm_fusion(PassContext& ctx);
int conv_activation_fusion(PassContext& ctx);
int conv_residual_fusion(PassContext& ctx);
int conv_layout_propagation(PassContext& ctx);
int device_placement(PassContext& ctx);

// The per-layer constraint applies to the node: its op type, or a glob over a source name.
bool precision_constraint_matches(const LayerPrecision& c, const Node& n);

// The passes for a fusion level, in order.
std::vector<Pass> passes_for(FusionLevel level, const Backend* backend = nullptr);

}  // namespace fb
