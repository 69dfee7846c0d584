// Registers the neural-network op families, one register_* per kernel file, so the
// shared op table needs a single entry for all of them.
#include "engine/ops/op_registry.h"

namespace fb {

void register_conv_ops(OpRegistry& r);
void register_int8_quantize_ops(OpRegistry& r);
void register_pool_ops(OpRegistry& r);
void register_normalization_ops(OpRegistry& r);
void register_resize_ops(OpRegistry& r);
void register_pad_ops(OpRegistry& r);
void register_space_depth_ops(OpRegistry& r);
void register_quantize_ops(OpRegistry& r);
void register_einsum_ops(OpRegistry& r);
void register_topk_ops(OpRegistry& r);
void register_cumsum_ops(OpRegistry& r);
void register_hardmax_ops(OpRegistry& r);
void register_loss_ops(OpRegistry& r);
void register_rnn_ops(OpRegistry& r);
void register_detection_ops(OpRegistry& r);
void register_grid_sample_ops(OpRegistry& r);
void register_group_norm_op(OpRegistry& r);

void register_nn_ops(OpRegistry& r) {
  register_conv_ops(r);
  register_int8_quantize_ops(r);
  register_pool_ops(r);
  register_normalization_ops(r);
  register_group_norm_op(r);
  register_resize_ops(r);
  register_pad_ops(r);
  register_space_depth_ops(r);
  register_quantize_ops(r);
  register_einsum_ops(r);
  register_topk_ops(r);
  register_cumsum_ops(r);
  register_hardmax_ops(r);
  register_loss_ops(r);
  register_rnn_ops(r);
  register_detection_ops(r);
  register_grid_sample_ops(r);
}

}  // namespace fb
