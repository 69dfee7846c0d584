// CUDA kernels for the normalizations, reductions and pools: softmax, layer norm (with a
// residual add, RMS form and statistics outputs), per-channel affine (BatchNormalization,
// ChannelAffine), group norm (InstanceNormalization, fusebench.GroupNorm), general
// reductions (Reduce*, the global pools) and windowed pools. Every tensor is read and
// written in its own element type (float32, float16, bfloat16) and computed in float32;
// the formulas are engine/ops' (softmax.cpp, fused_ops.cpp, normalization.cpp,
// group_norm.cpp, reduce.cpp, pool.cpp). Parameter structs are built once by the layers
// and passed by value.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/backend/cuda/elementwise_kernels.h"
#include "engine/ir/dtype.h"

namespace fb::cuda {

// A tensor as a kernel reads it: device address and element type (data null: absent).
struct DevTensor {
  const void* data = nullptr;
  DType dtype = DType::Float32;
};
struct DevOutput {
  void* data = nullptr;
  DType dtype = DType::Float32;
};

// x viewed as [outer, len, inner], normalized along len.
struct SoftmaxParams {
  DevTensor x;
  DevOutput y;
  int64_t outer = 1, len = 1, inner = 1;
  bool log = false;
};
void launch_softmax(const SoftmaxParams& p, cudaStream_t stream);

// rows × len: x = a (+ b); y = (x - mean) · inv_std · gamma + beta, where inv_std =
// 1 / sqrt(mean((x - mean)²) + eps); RMS: mean taken as 0.
struct LayerNormParams {
  DevTensor a, b;              // b: the residual of AddLayerNorm
  DevOutput y, sum;            // sum: AddLayerNorm's a + b, when read
  DevTensor gamma, beta;       // [len], or one element broadcast (scalar_* set)
  bool scalar_gamma = false, scalar_beta = false;
  DevOutput mean, inv_std;     // [rows] each, when asked for (LayerNormalization)
  int64_t rows = 0, len = 0;
  float epsilon = 1e-5f;
  bool rms = false;
};
void launch_layernorm(const LayerNormParams& p, cudaStream_t stream);

// x [N, C, inner]: y = x · a[c] + b[c], with a = scale / sqrt(var + eps) and b = shift -
// mean · a when mean and var are given (BatchNormalization), else a = scale, b = shift
// (ChannelAffine); then max(y, 0) with relu.
struct ChannelAffineParams {
  DevTensor x;
  DevOutput y;
  DevTensor scale, shift, mean, var;
  float epsilon = 1e-5f;
  bool relu = false;
  int64_t planes = 0, channels = 1, inner = 0;  // planes = N · C
};
void launch_channel_affine(const ChannelAffineParams& p, cudaStream_t stream);

// x [batch, channels, inner] in `groups` blocks per sample, as engine/ops/group_norm.h.
enum class GroupNormAct : uint8_t { None, Silu, Gelu };
struct GroupNormParams {
  DevTensor x;
  DevOutput y;
  int64_t batch = 0, channels = 0, groups = 1, inner = 0;
  float epsilon = 1e-5f;
  DevTensor group_scale, group_bias, channel_scale, channel_bias;  // each optional
  GroupNormAct activation = GroupNormAct::None;
  bool channels_last = false;  // x and y hold [batch, inner, channels] bytes
};
void launch_group_norm(const GroupNormParams& p, cudaStream_t stream);

// Identity: the noop of an empty axes list (noop_with_empty_axes).
enum class ReduceKind : uint8_t { Mean, Sum, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare, Identity };
// Each output element reduces `count` inputs: its offset over the kept dims plus each
// reduced position's offset over the reduced dims (element strides of x).
struct ReduceParams {
  DevTensor x;
  DevOutput y;
  ReduceKind kind = ReduceKind::Sum;
  int64_t outputs = 0, count = 1;
  int kept_rank = 0, reduced_rank = 0;
  int64_t kept_dims[kMaxDims] = {}, kept_strides[kMaxDims] = {};
  int64_t reduced_dims[kMaxDims] = {}, reduced_strides[kMaxDims] = {};
};
void launch_reduce(const ReduceParams& p, cudaStream_t stream);

// Windowed pools in three spatial dims (1-D and 2-D pools have leading unit dims), as
// engine/ops/pool.cpp's Pool3.
enum class PoolKind : uint8_t { Max, Average, Lp };
struct PoolParams {
  DevTensor x;
  DevOutput y;
  int64_t* indices = nullptr;  // MaxPool's second output (int64), or null
  PoolKind kind = PoolKind::Max;
  int64_t planes = 0;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
  int64_t pb[3] = {}, pe[3] = {};
  bool count_include_pad = false;
  float p = 2.f;               // Lp
  bool column_major = false;   // MaxPool's storage_order = 1, for the indices
  int spatial = 2;             // the pool's own spatial dims, for column-major indices
  int64_t channels = 1;        // channels_last: x and y hold [N, spatial..., channels] bytes
  bool channels_last = false;  // (planes = N · channels); no indices then
};
void launch_pool(const PoolParams& p, cudaStream_t stream);

}  // namespace fb::cuda
