// The data-movement kernels of the CUDA backend (engine/backend/cuda/data_movement_kernels.cu),
// as plain host functions that enqueue on a stream. Elements move by size, never by value:
// one kernel serves every dtype of that size. The layers that use them are in
// cuda_data_movement_layers.cpp.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/backend/cuda/cuda_layer_table.h"

namespace fb::cuda {

inline constexpr int kMaxDims = 8;

// Every element of a box of `rank` dims (dims[0] the outermost) is read at src +
// sum(coord[d] * src_stride[d]) and written at dst + sum(coord[d] * dst_stride[d]), strides
// in bytes: a negative stride walks backwards (a Slice's negative step), a zero one
// repeats (Expand's broadcast). Transpose, Slice, Concat, Split, Expand, Tile, ChannelShuffle
// and DepthToSpace are all such a copy.
struct StridedCopy {
  int rank = 0;
  int64_t elem_bytes = 0;
  int64_t dims[kMaxDims] = {};
  int64_t src_stride[kMaxDims] = {};
  int64_t dst_stride[kMaxDims] = {};
};

// The copy of a box `dims` with strides given in elements of `elem_bytes` bytes, its dims of
// size 1 dropped and neighbours contiguous on both sides merged (fewer divisions per element,
// longer contiguous runs to copy in wide words). Error when more than kMaxDims dims remain.
StridedCopy strided_copy(const std::vector<int64_t>& dims, const std::vector<int64_t>& src_stride,
                         const std::vector<int64_t>& dst_stride, size_t elem_bytes);
// Enqueues the copy; contiguous innermost runs move in the widest words (up to 16 bytes)
// that the run length, the strides and the two addresses allow.
void launch_strided_copy(const StridedCopy& copy, const void* src, void* dst, cudaStream_t stream);

// Gather along an axis: x viewed as [outer, dim, inner], out as [outer, count, inner],
// out[o, j, :] = x[o, indices[j], :] (indices int32 or int64; negative ones count from the
// end; one out of range gives zeros, as the device cannot raise an error).
struct GatherArgs {
  int64_t outer = 0, dim = 0, count = 0;
  int64_t inner_bytes = 0;  // bytes of one gathered row
  bool int32_indices = false;
};
void launch_gather(const GatherArgs& args, const void* x, const void* indices, void* out, cudaStream_t stream);

// GatherElements: out (the indices' shape, dims in elements) reads x at the same coordinates
// but along `axis`, where it reads indices' value (negative from the end; out of range: zero).
struct GatherElementsArgs {
  int rank = 0, axis = 0;
  int64_t elem_bytes = 0;
  int64_t dim = 0;  // x's size along axis
  int64_t dims[kMaxDims] = {};
  int64_t x_stride[kMaxDims] = {};  // in elements
  bool int32_indices = false;
};
void launch_gather_elements(const GatherElementsArgs& args, const void* x, const void* indices, void* out, cudaStream_t stream);

// out[o] = x[sum(idx[d][o[d]] * in_stride[d])], or the fill value where some idx[d][o[d]] is -1:
// Pad (per dim: the input index each output index reads, -1 for the constant) and nearest
// Resize (per dim: the one tap of each output index, -1 outside tf_crop_and_resize's roi).
struct TableGatherArgs {
  int rank = 0;
  int64_t elem_bytes = 0;
  int64_t out_dims[kMaxDims] = {};
  int64_t in_stride[kMaxDims] = {};  // in elements
  const int64_t* idx[kMaxDims] = {};  // device memory, out_dims[d] entries each
  uint64_t fill_bits = 0;             // the fill value's bytes, where `fill` (device) is null
};
void launch_table_gather(const TableGatherArgs& args, const void* x, const void* fill, void* out, cudaStream_t stream);

// Trilu over the last two dims ([mats, rows, cols]): keeps j - i >= k (upper) or <= k, zeros
// elsewhere. k is `k`, or the int64 scalar at `k_device` (device memory) where that is not null.
struct TriluArgs {
  int64_t mats = 0, rows = 0, cols = 0, k = 0;
  int64_t elem_bytes = 0;
  bool upper = true;
};
void launch_trilu(const TriluArgs& args, const void* x, const void* k_device, void* out, cudaStream_t stream);

// Resize by weighted per-dimension taps (engine/ops/resize.h, ResizeTaps: linear, cubic), in
// device memory: output index o of dim d reads input indices idx[d][start[d][o] ..
// start[d][o+1]) with weights w[d][...]; an index -1 (outside tf_crop_and_resize's roi) makes
// the element `extrapolation`. Float tensors only, arithmetic in float32.
struct ResizeArgs {
  int rank = 0;
  Elem elem = Elem::F32;
  int64_t out_dims[kMaxDims] = {};
  int64_t in_stride[kMaxDims] = {};  // in elements
  const int64_t* start[kMaxDims] = {};
  const int64_t* idx[kMaxDims] = {};
  const float* w[kMaxDims] = {};
  float extrapolation = 0.f;
};
void launch_resize(const ResizeArgs& args, const void* x, void* out, cudaStream_t stream);

}  // namespace fb::cuda
