// Kernels of normalization_kernels.h. Rows are reduced by one block each (a warp each for
// short reductions), two passes for a variance (mean, then squared deviations: no
// cancellation for large means, as the CPU kernels), float accumulators combined by warp
// shuffles. Every output element is written by the thread that read the input elements
// of its index after all the block's reads of the row, so the in-place ops stay in place.
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "engine/backend/cuda/device_math.cuh"
#include "engine/backend/cuda/normalization_kernels.h"

namespace fb::cuda {

namespace {

constexpr unsigned kFullMask = 0xffffffffu;

struct AddOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {  // NaN skipped, as the CPU's row_max
  __device__ float operator()(float a, float b) const { return a < b ? b : a; }
};

template <class Op>
__device__ __forceinline__ float warp_reduce(float v, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}

// The block's reduction of v, in every thread. blockDim.x is a multiple of 32.
template <class Op>
__device__ float block_reduce(float v, Op op, float identity) {
  __shared__ float partial[32];
  v = warp_reduce(v, op);
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  __syncthreads();  // the previous call's readers are done with `partial`
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < int(blockDim.x) / 32 ? partial[lane] : identity;
  return warp_reduce(v, op);
}

// Threads per block for rows of `len`: about four elements each, 32 to 512.
int row_threads(int64_t len) {
  const int64_t warps = (len / 4 + 31) / 32;
  return int(32 * (warps < 1 ? 1 : warps > 16 ? 16 : warps));
}

unsigned row_grid(int64_t rows) { return unsigned(rows < 1 ? 1 : rows > (1 << 20) ? (1 << 20) : rows); }

// ---- Softmax ------------------------------------------------------------------------------
__global__ void softmax_rows(const SoftmaxParams p) {
  for (int64_t row = blockIdx.x; row < p.outer; row += gridDim.x) {
    const int64_t base = row * p.len;
    float mx = -INFINITY;
    for (int64_t j = threadIdx.x; j < p.len; j += blockDim.x) mx = MaxOp()(mx, load_float(p.x.data, p.x.dtype, base + j));
    mx = block_reduce(mx, MaxOp(), -INFINITY);
    float sum = 0.f;
    for (int64_t j = threadIdx.x; j < p.len; j += blockDim.x) sum += expf(load_float(p.x.data, p.x.dtype, base + j) - mx);
    sum = block_reduce(sum, AddOp(), 0.f);
    const float lse = mx + logf(sum), inv = 1.f / sum;
    for (int64_t j = threadIdx.x; j < p.len; j += blockDim.x) {
      const float v = load_float(p.x.data, p.x.dtype, base + j);
      store_float(p.y.data, p.y.dtype, base + j, p.log ? v - lse : expf(v - mx) * inv);
    }
  }
}

// Along an axis that is not the innermost: one thread per (outer, inner) column, its
// neighbours on the next columns (coalesced).
__global__ void softmax_columns(const SoftmaxParams p) {
  const int64_t columns = p.outer * p.inner;
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < columns; c += int64_t(gridDim.x) * blockDim.x) {
    const int64_t base = (c / p.inner) * p.len * p.inner + c % p.inner;
    float mx = -INFINITY;
    for (int64_t j = 0; j < p.len; ++j) mx = MaxOp()(mx, load_float(p.x.data, p.x.dtype, base + j * p.inner));
    float sum = 0.f;
    for (int64_t j = 0; j < p.len; ++j) sum += expf(load_float(p.x.data, p.x.dtype, base + j * p.inner) - mx);
    const float lse = mx + logf(sum), inv = 1.f / sum;
    for (int64_t j = 0; j < p.len; ++j) {
      const float v = load_float(p.x.data, p.x.dtype, base + j * p.inner);
      store_float(p.y.data, p.y.dtype, base + j * p.inner, p.log ? v - lse : expf(v - mx) * inv);
    }
  }
}

// ---- LayerNorm ----------------------------------------------------------------------------
__device__ __forceinline__ float layernorm_input(const LayerNormParams& p, int64_t i) {
  const float a = load_float(p.a.data, p.a.dtype, i);
  return p.b.data ? a + load_float(p.b.data, p.b.dtype, i) : a;
}

__global__ void layernorm_rows(const LayerNormParams p) {
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const int64_t base = row * p.len;
    float mean = 0.f;
    if (!p.rms) {
      float total = 0.f;
      for (int64_t j = threadIdx.x; j < p.len; j += blockDim.x) total += layernorm_input(p, base + j);
      mean = block_reduce(total, AddOp(), 0.f) / float(p.len);
    }
    float sq = 0.f;
    for (int64_t j = threadIdx.x; j < p.len; j += blockDim.x) {
      const float d = layernorm_input(p, base + j) - mean;
      sq += d * d;
    }
    const float inv = 1.f / sqrtf(block_reduce(sq, AddOp(), 0.f) / float(p.len) + p.epsilon);
    for (int64_t j = threadIdx.x; j < p.len; j += blockDim.x) {
      const float x = layernorm_input(p, base + j);
      float v = (x - mean) * inv;
      if (p.gamma.data) v *= load_float(p.gamma.data, p.gamma.dtype, p.scalar_gamma ? 0 : j);
      if (p.beta.data) v += load_float(p.beta.data, p.beta.dtype, p.scalar_beta ? 0 : j);
      if (p.sum.data) store_float(p.sum.data, p.sum.dtype, base + j, x);
      store_float(p.y.data, p.y.dtype, base + j, v);
    }
    if (threadIdx.x == 0) {
      if (p.mean.data) store_float(p.mean.data, p.mean.dtype, row, mean);
      if (p.inv_std.data) store_float(p.inv_std.data, p.inv_std.dtype, row, inv);
    }
  }
}

// ---- Per-channel affine -------------------------------------------------------------------
template <typename I>
__global__ void channel_affine(const ChannelAffineParams p) {
  const I n = I(p.planes * p.inner), inner = I(p.inner), channels = I(p.channels);
  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < n; i += I(gridDim.x) * I(blockDim.x)) {
    const I c = (i / inner) % channels;
    float a = load_float(p.scale.data, p.scale.dtype, c), b = load_float(p.shift.data, p.shift.dtype, c);
    if (p.var.data) {  // BatchNormalization's folding, as engine/ops/normalization.cpp does it
      a = a / sqrtf(load_float(p.var.data, p.var.dtype, c) + p.epsilon);
      b = b - load_float(p.mean.data, p.mean.dtype, c) * a;
    }
    const float v = load_float(p.x.data, p.x.dtype, i) * a + b;
    store_float(p.y.data, p.y.dtype, i, p.relu ? (v > 0.f ? v : 0.f) : v);
  }
}

// ---- Group norm ---------------------------------------------------------------------------
__device__ __forceinline__ float optional_param(const DevTensor& t, int64_t i, float absent) {
  return t.data ? load_float(t.data, t.dtype, i) : absent;
}

__global__ void group_norm_blocks(const GroupNormParams p) {
  const int64_t per_group = p.channels / p.groups, len = per_group * p.inner;
  for (int64_t block = blockIdx.x; block < p.batch * p.groups; block += gridDim.x) {
    const int64_t g = block % p.groups, base = block * len;
    // Element j of the group (channel j / inner, position j % inner of it; channels-last:
    // channel j % per_group of position j / per_group) lies at at(j).
    const int64_t sample = (block / p.groups) * p.inner * p.channels + g * per_group;
    auto at = [&](int64_t j) {
      return p.channels_last ? sample + (j / per_group) * p.channels + j % per_group : base + j;
    };
    float total = 0.f;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) total += load_float(p.x.data, p.x.dtype, at(j));
    const float mean = len ? block_reduce(total, AddOp(), 0.f) / float(len) : 0.f;
    float sq = 0.f;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      const float d = load_float(p.x.data, p.x.dtype, at(j)) - mean;
      sq += d * d;
    }
    sq = block_reduce(sq, AddOp(), 0.f);
    const float inv = 1.f / sqrtf((len ? sq / float(len) : 0.f) + p.epsilon);
    const float gs = optional_param(p.group_scale, g, 1.f), gb = optional_param(p.group_bias, g, 0.f);
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      // ((x - mean) · inv · gs + gb) · cs + cb, as (x - mean) · scale + shift (group_norm.cpp).
      const int64_t ch = g * per_group + (p.channels_last ? j % per_group : j / p.inner);
      const float cs = optional_param(p.channel_scale, ch, 1.f), cb = optional_param(p.channel_bias, ch, 0.f);
      float v = (load_float(p.x.data, p.x.dtype, at(j)) - mean) * (inv * gs * cs) + (gb * cs + cb);
      if (p.activation == GroupNormAct::Silu) v *= unary_value<float>(UnaryFn::Sigmoid, v);
      else if (p.activation == GroupNormAct::Gelu) v = unary_value<float>(UnaryFn::Gelu, v);
      store_float(p.y.data, p.y.dtype, at(j), v);
    }
  }
}

// ---- Reductions ---------------------------------------------------------------------------
// Offset of flat index `idx` over dims with element strides (innermost last).
__device__ __forceinline__ int64_t strided_offset(int64_t idx, int rank, const int64_t* dims, const int64_t* strides) {
  int64_t off = 0;
  for (int d = rank - 1; d > 0; --d) {
    off += (idx % dims[d]) * strides[d];
    idx /= dims[d];
  }
  return rank ? off + idx * strides[0] : off;
}

// engine/ops/reduce.cpp's Acc: what one element adds, how partial results combine, the end.
__device__ __forceinline__ float reduce_init(ReduceKind k) {
  return k == ReduceKind::Max ? -INFINITY : k == ReduceKind::Min ? INFINITY : k == ReduceKind::Prod ? 1.f : 0.f;
}
__device__ __forceinline__ float reduce_combine(ReduceKind k, float acc, float v) {
  switch (k) {
    case ReduceKind::Max: return acc < v ? v : acc;
    case ReduceKind::Min: return v < acc ? v : acc;
    case ReduceKind::Prod: return acc * v;
    default: return acc + v;
  }
}
__device__ __forceinline__ float reduce_term(ReduceKind k, float v) {
  switch (k) {
    case ReduceKind::L2:
    case ReduceKind::SumSquare: return v * v;
    case ReduceKind::L1: return fabsf(v);
    case ReduceKind::LogSumExp: return expf(v);
    default: return v;
  }
}
__device__ __forceinline__ float reduce_finish(ReduceKind k, float acc, int64_t count) {
  if (k == ReduceKind::Mean) return count ? acc / float(count) : 0.f;
  if (k == ReduceKind::L2) return sqrtf(acc);
  if (k == ReduceKind::LogSum || k == ReduceKind::LogSumExp) return logf(acc);
  return acc;
}

// This thread's share of output o's reduction: positions first, first + step, ...
__device__ __forceinline__ float reduce_share(const ReduceParams& p, int64_t base, int64_t first, int64_t step) {
  float acc = reduce_init(p.kind);
  for (int64_t r = first; r < p.count; r += step) {
    const float v = load_float(p.x.data, p.x.dtype, base + strided_offset(r, p.reduced_rank, p.reduced_dims, p.reduced_strides));
    acc = reduce_combine(p.kind, acc, reduce_term(p.kind, v));
  }
  return acc;
}

struct CombineOp {
  ReduceKind kind;
  __device__ float operator()(float a, float b) const { return reduce_combine(kind, a, b); }
};

__device__ __forceinline__ void reduce_store(const ReduceParams& p, int64_t o, float acc) {
  store_float(p.y.data, p.y.dtype, o, reduce_finish(p.kind, acc, p.count));
}

// One thread per output (the reduced axes are not innermost: neighbouring threads read
// neighbouring elements).
__global__ void reduce_by_thread(const ReduceParams p) {
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < p.outputs; o += int64_t(gridDim.x) * blockDim.x)
    reduce_store(p, o, reduce_share(p, strided_offset(o, p.kept_rank, p.kept_dims, p.kept_strides), 0, 1));
}

// One warp per output (contiguous reduced runs).
__global__ void reduce_by_warp(const ReduceParams p) {
  const int64_t warps = int64_t(blockDim.x) / 32, lane = threadIdx.x % 32;
  for (int64_t o = int64_t(blockIdx.x) * warps + threadIdx.x / 32; o < p.outputs; o += int64_t(gridDim.x) * warps) {
    const float acc = warp_reduce(reduce_share(p, strided_offset(o, p.kept_rank, p.kept_dims, p.kept_strides), lane, 32),
                                  CombineOp{p.kind});
    if (lane == 0) reduce_store(p, o, acc);
  }
}

// One block per output (few outputs, long reductions).
__global__ void reduce_by_block(const ReduceParams p) {
  for (int64_t o = blockIdx.x; o < p.outputs; o += gridDim.x) {
    const float share = reduce_share(p, strided_offset(o, p.kept_rank, p.kept_dims, p.kept_strides), threadIdx.x, blockDim.x);
    const float acc = block_reduce(share, CombineOp{p.kind}, reduce_init(p.kind));
    if (threadIdx.x == 0) reduce_store(p, o, acc);
  }
}

// ---- Windowed pools -----------------------------------------------------------------------
template <typename I>
__global__ void pool_windows(const PoolParams p) {
  const int64_t in_plane = p.in[0] * p.in[1] * p.in[2];
  const I out_plane = I(p.out[0] * p.out[1] * p.out[2]), out_w = I(p.out[2]), out_h = I(p.out[1]);
  const I n = I(p.planes) * out_plane;
  const I channels = I(p.channels);
  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < n; i += I(gridDim.x) * I(blockDim.x)) {
    // Output i's plane (sample, channel) and pixel; x's element `at` of that plane lies at
    // xp + at · step.
    I pl, o;
    int64_t xp, step;
    if (p.channels_last) {  // i = (b · out_plane + o) · C + c
      const I c = i % channels, bo = i / channels;
      o = bo % out_plane, pl = (bo / out_plane) * channels + c;
      xp = int64_t(bo / out_plane) * in_plane * p.channels + c, step = p.channels;
    } else {
      pl = i / out_plane, o = i % out_plane;
      xp = pl * in_plane, step = 1;
    }
    const int64_t ow = o % out_w, oh = (o / out_w) % out_h, od = o / (out_w * out_h);
    const int64_t st[3] = {od * p.s[0] - p.pb[0], oh * p.s[1] - p.pb[1], ow * p.s[2] - p.pb[2]};
    float best = -FLT_MAX, acc = 0.f;  // the CPU's numeric_limits<float>::lowest() for an empty window
    int64_t best_at = -1, count = 0;
    for (int64_t kd = 0; kd < p.k[0]; ++kd) {
      const int64_t id = st[0] + kd * p.d[0];
      if (id < 0 || id >= p.in[0]) continue;
      for (int64_t kh = 0; kh < p.k[1]; ++kh) {
        const int64_t ih = st[1] + kh * p.d[1];
        if (ih < 0 || ih >= p.in[1]) continue;
        for (int64_t kw = 0; kw < p.k[2]; ++kw) {
          const int64_t iw = st[2] + kw * p.d[2];
          if (iw < 0 || iw >= p.in[2]) continue;
          const int64_t at = (id * p.in[1] + ih) * p.in[2] + iw;
          const float v = load_float(p.x.data, p.x.dtype, xp + at * step);
          if (p.kind == PoolKind::Max) {
            if (best_at < 0 || v > best) best = v, best_at = at;
          } else {
            acc += p.kind == PoolKind::Lp ? (p.p == 2.f ? v * v : powf(fabsf(v), p.p)) : v;
          }
          ++count;
        }
      }
    }
    if (p.kind == PoolKind::Max) {
      store_float(p.y.data, p.y.dtype, i, best);
      if (!p.indices) continue;
      int64_t flat = best_at < 0 ? 0 : best_at;
      if (p.column_major) {  // the spatial index with the first spatial dim fastest
        const int64_t iw = flat % p.in[2], ih = (flat / p.in[2]) % p.in[1], id = flat / (p.in[2] * p.in[1]);
        flat = p.spatial == 3 ? (iw * p.in[1] + ih) * p.in[0] + id : p.spatial == 2 ? iw * p.in[1] + ih : iw;
      }
      p.indices[i] = pl * in_plane + flat;
    } else if (p.kind == PoolKind::Lp) {
      store_float(p.y.data, p.y.dtype, i, p.p == 2.f ? sqrtf(acc) : powf(acc, 1.f / p.p));
    } else {
      int64_t divisor = count;
      if (p.count_include_pad) {  // window positions inside the padded input
        divisor = 1;
        for (int dim = 0; dim < 3; ++dim) {
          int64_t inside = 0;
          for (int64_t k = 0; k < p.k[dim]; ++k) {
            const int64_t at = st[dim] + k * p.d[dim];
            inside += at >= -p.pb[dim] && at < p.in[dim] + p.pe[dim];
          }
          divisor *= inside;
        }
      }
      store_float(p.y.data, p.y.dtype, i, divisor ? acc / float(divisor) : 0.f);
    }
  }
}

}  // namespace

void launch_softmax(const SoftmaxParams& p, cudaStream_t stream) {
  if (p.outer * p.inner == 0 || p.len == 0) return;
  if (p.inner == 1) {
    softmax_rows<<<row_grid(p.outer), row_threads(p.len), 0, stream>>>(p);
  } else {
    softmax_columns<<<grid_for(p.outer * p.inner, 256), 256, 0, stream>>>(p);
  }
}

void launch_layernorm(const LayerNormParams& p, cudaStream_t stream) {
  if (p.rows == 0 || p.len == 0) return;
  layernorm_rows<<<row_grid(p.rows), row_threads(p.len), 0, stream>>>(p);
}

void launch_channel_affine(const ChannelAffineParams& p, cudaStream_t stream) {
  if (p.planes * p.inner == 0) return;
  if (fits_32_bits(p.planes * p.inner)) channel_affine<int32_t><<<grid_for(p.planes * p.inner, 256), 256, 0, stream>>>(p);
  else channel_affine<int64_t><<<grid_for(p.planes * p.inner, 256), 256, 0, stream>>>(p);
}

void launch_group_norm(const GroupNormParams& p, cudaStream_t stream) {
  if (p.batch * p.groups == 0) return;
  // Groups are long and few: twice a row's threads, up to 1024.
  const int threads = 2 * row_threads(p.channels / p.groups * p.inner);
  group_norm_blocks<<<row_grid(p.batch * p.groups), threads > 1024 ? 1024 : threads, 0, stream>>>(p);
}

void launch_reduce(const ReduceParams& p, cudaStream_t stream) {
  if (p.outputs == 0) return;
  const bool contiguous = p.reduced_rank > 0 && p.reduced_strides[p.reduced_rank - 1] == 1;
  if (!contiguous) {
    reduce_by_thread<<<grid_for(p.outputs, 256), 256, 0, stream>>>(p);
  } else if (p.count >= 4096 && p.outputs < 1024) {
    reduce_by_block<<<row_grid(p.outputs), 512, 0, stream>>>(p);
  } else {
    reduce_by_warp<<<grid_for(p.outputs * 32, 256), 256, 0, stream>>>(p);
  }
}

void launch_pool(const PoolParams& p, cudaStream_t stream) {
  const int64_t n = p.planes * p.out[0] * p.out[1] * p.out[2];
  if (n == 0) return;
  if (fits_32_bits(std::max(n, p.planes * p.in[0] * p.in[1] * p.in[2])))
    pool_windows<int32_t><<<grid_for(n, 256), 256, 0, stream>>>(p);
  else
    pool_windows<int64_t><<<grid_for(n, 256), 256, 0, stream>>>(p);
}

}  // namespace fb::cuda
