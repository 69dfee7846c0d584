// The data-movement kernels (data_movement_kernels.h). Each thread moves one element (or
// one word of a contiguous run) in a grid-stride loop; elements are moved as unsigned words
// of their size, so one instantiation serves every dtype of that size.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>

#include "engine/backend/cuda/data_movement_kernels.h"

namespace fb::cuda {

namespace {

constexpr int kThreads = 256;

// Enough blocks to fill the GPU many times over; the grid-stride loops take the rest.
unsigned blocks_for(int64_t n) { return unsigned(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, int64_t(1) << 16)); }

// Calls f(W{}) with an unsigned word of `bytes` bytes: an element's size, or with kWords
// also 16 (several elements of a contiguous run moved at once).
template <bool kWords = false, typename F>
void by_size(int64_t bytes, F f) {
  switch (bytes) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
    case 16:
      if constexpr (kWords) return f(uint4{});
  }
  throw Error("CUDA data movement: elements of " + std::to_string(bytes) + " bytes are not supported");
}

// The widest word (up to 16 bytes, at least `elem`) dividing every value in `vs`.
int64_t widest_word(int64_t elem, std::initializer_list<int64_t> vs) {
  for (int64_t w = 16; w > elem; w /= 2) {
    bool fits = true;
    for (int64_t v : vs) fits = fits && v % w == 0;
    if (fits) return w;
  }
  return elem;
}

int64_t address(const void* p) { return int64_t(reinterpret_cast<uintptr_t>(p)); }

// ---- strided copy ---------------------------------------------------------------------------
// Dims innermost first; I is the coordinate type: 32-bit divisions where the box allows.
template <typename I>
struct CopyParams {
  int rank;
  I n;
  I dims[kMaxDims];
  int64_t src[kMaxDims], dst[kMaxDims];
};

template <typename W, typename I>
__global__ void strided_copy_kernel(CopyParams<I> p, const char* src, char* dst) {
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < p.n; i += I(gridDim.x) * blockDim.x) {
    I rem = i;
    int64_t s = 0, d = 0;
#pragma unroll
    for (int k = 0; k < kMaxDims; ++k) {
      if (k == p.rank) break;
      const I c = rem % p.dims[k];
      rem /= p.dims[k];
      s += int64_t(c) * p.src[k];
      d += int64_t(c) * p.dst[k];
    }
    *reinterpret_cast<W*>(dst + d) = *reinterpret_cast<const W*>(src + s);
  }
}

template <typename W, typename I>
void run_strided_copy(const StridedCopy& c, int64_t n, const void* src, void* dst, cudaStream_t stream) {
  CopyParams<I> p{};
  p.rank = c.rank;
  p.n = I(n);
  for (int k = 0; k < c.rank; ++k) {
    p.dims[k] = I(c.dims[c.rank - 1 - k]);
    p.src[k] = c.src_stride[c.rank - 1 - k];
    p.dst[k] = c.dst_stride[c.rank - 1 - k];
  }
  strided_copy_kernel<W, I><<<blocks_for(n), kThreads, 0, stream>>>(p, static_cast<const char*>(src), static_cast<char*>(dst));
}

// ---- gathers --------------------------------------------------------------------------------
template <typename Idx>
__device__ int64_t wrapped_index(const Idx* indices, int64_t j, int64_t dim) {
  const int64_t i = int64_t(indices[j]);
  return i < 0 ? i + dim : i;
}

template <typename W, typename Idx>
__global__ void gather_kernel(GatherArgs a, int64_t inner, const W* x, const Idx* indices, W* out) {
  const int64_t n = a.outer * a.count * inner;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t k = i % inner, row = i / inner, j = row % a.count, o = row / a.count;
    const int64_t at = wrapped_index(indices, j, a.dim);
    out[i] = at >= 0 && at < a.dim ? x[(o * a.dim + at) * inner + k] : W{};
  }
}

template <typename W, typename Idx>
__global__ void gather_elements_kernel(GatherElementsArgs a, int64_t n, const W* x, const Idx* indices, W* out) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = i, off = 0;
#pragma unroll
    for (int d = kMaxDims - 1; d >= 0; --d) {
      if (d >= a.rank) continue;
      const int64_t c = rem % a.dims[d];
      rem /= a.dims[d];
      if (d != a.axis) off += c * a.x_stride[d];
    }
    const int64_t at = wrapped_index(indices, i, a.dim);
    out[i] = at >= 0 && at < a.dim ? x[off + at * a.x_stride[a.axis]] : W{};
  }
}

// Calls f(Idx{}) with the indices' element type.
template <typename F>
void by_index_type(bool int32, F f) {
  if (int32) f(int32_t{});
  else f(int64_t{});
}

// Enqueues f(W{}, blocks) over n elements of `bytes` bytes (nothing where n is 0) and checks the launch.
template <typename F>
void launch_elements(int64_t n, int64_t bytes, F f) {
  if (n == 0) return;
  by_size(bytes, [&](auto word) { f(word, blocks_for(n)); });
  FB_CUDA(cudaGetLastError());
}

// ---- table gather (Pad, nearest Resize) -------------------------------------------------------
template <typename W>
__global__ void table_gather_kernel(TableGatherArgs a, int64_t n, const W* x, const W* fill_device, W* out) {
  W fill;
  if (fill_device) fill = *fill_device;
  else memcpy(&fill, &a.fill_bits, sizeof(W));
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = i, off = 0;
    bool outside = false;
#pragma unroll
    for (int d = kMaxDims - 1; d >= 0; --d) {
      if (d >= a.rank) continue;
      const int64_t src = a.idx[d][rem % a.out_dims[d]];
      rem /= a.out_dims[d];
      outside = outside || src < 0;
      off += src * a.in_stride[d];
    }
    out[i] = outside ? fill : x[off];
  }
}

// ---- Trilu ----------------------------------------------------------------------------------
template <typename W>
__global__ void trilu_kernel(TriluArgs a, const W* x, const int64_t* k_device, W* out) {
  const int64_t k = k_device ? *k_device : a.k, n = a.mats * a.rows * a.cols;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = i % a.cols, r = (i / a.cols) % a.rows;
    const bool keep = a.upper ? j - r >= k : j - r <= k;
    out[i] = keep ? x[i] : W{};
  }
}

// ---- Resize ---------------------------------------------------------------------------------
__device__ float to_float(float v) { return v; }
__device__ float to_float(__half v) { return __half2float(v); }
__device__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T>
__device__ T from_float(float v) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(v);
  else return v;
}

// Weighted: the sum over the product of every dim's taps (an odometer over the tap ranges).
template <typename T>
__global__ void resize_kernel(ResizeArgs a, int64_t n, const T* x, T* out) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t first[kMaxDims], end[kMaxDims], k[kMaxDims];
    int64_t rem = i;
    bool outside = false;
    for (int d = a.rank - 1; d >= 0; --d) {
      const int64_t o = rem % a.out_dims[d];
      rem /= a.out_dims[d];
      first[d] = k[d] = a.start[d][o];
      end[d] = a.start[d][o + 1];
      outside = outside || a.idx[d][first[d]] < 0;
    }
    float acc = 0.f;
    while (!outside) {
      int64_t off = 0;
      float w = 1.f;
      for (int d = 0; d < a.rank; ++d) {
        off += a.idx[d][k[d]] * a.in_stride[d];
        w *= a.w[d][k[d]];
      }
      acc += w * to_float(x[off]);
      int d = a.rank - 1;
      for (; d >= 0; --d) {
        if (++k[d] < end[d]) break;
        k[d] = first[d];
      }
      if (d < 0) break;
    }
    out[i] = from_float<T>(outside ? a.extrapolation : acc);
  }
}

int64_t product(const int64_t* dims, int rank) {
  int64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= dims[d];
  return n;
}

}  // namespace

StridedCopy strided_copy(const std::vector<int64_t>& dims, const std::vector<int64_t>& src_stride,
                         const std::vector<int64_t>& dst_stride, size_t elem_bytes) {
  StridedCopy c;
  c.elem_bytes = int64_t(elem_bytes);
  const int64_t es = int64_t(elem_bytes);
  if (std::find(dims.begin(), dims.end(), 0) != dims.end()) {  // nothing to copy
    c.rank = 1;
    return c;
  }
  // Outermost first; a dim merges into the one outside it when both sides step over it
  // exactly as over the whole inner dim.
  std::vector<int64_t> d, s, t;
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] == 1) continue;
    if (!d.empty() && s.back() == src_stride[k] * es * dims[k] && t.back() == dst_stride[k] * es * dims[k]) {
      d.back() *= dims[k];
      s.back() = src_stride[k] * es;
      t.back() = dst_stride[k] * es;
      continue;
    }
    d.push_back(dims[k]);
    s.push_back(src_stride[k] * es);
    t.push_back(dst_stride[k] * es);
  }
  if (d.size() > size_t(kMaxDims))
    throw Error("a copy over " + std::to_string(d.size()) + " dimensions (at most " + std::to_string(kMaxDims) + ")");
  c.rank = int(d.size());
  std::copy(d.begin(), d.end(), c.dims);
  std::copy(s.begin(), s.end(), c.src_stride);
  std::copy(t.begin(), t.end(), c.dst_stride);
  return c;
}

void launch_strided_copy(const StridedCopy& copy, const void* src, void* dst, cudaStream_t stream) {
  StridedCopy c = copy;
  const int64_t n = product(c.dims, c.rank);
  if (n == 0) return;
  const int last = c.rank - 1;
  if (c.rank && c.src_stride[last] == c.elem_bytes && c.dst_stride[last] == c.elem_bytes) {
    const int64_t run = c.dims[last] * c.elem_bytes;
    if (c.rank == 1) return FB_CUDA(cudaMemcpyAsync(dst, src, size_t(run), cudaMemcpyDeviceToDevice, stream));
    // A contiguous innermost run moves in wider words where every row starts aligned to them.
    int64_t w = widest_word(c.elem_bytes, {run, address(src), address(dst)});
    for (int k = 0; k < last; ++k) w = std::min(w, widest_word(c.elem_bytes, {c.src_stride[k], c.dst_stride[k]}));
    c.dims[last] = run / w;
    c.src_stride[last] = c.dst_stride[last] = w;
    c.elem_bytes = w;
  }
  const int64_t words = product(c.dims, c.rank);
  by_size<true>(c.elem_bytes, [&](auto word) {
    using W = decltype(word);
    if (words < (int64_t(1) << 31)) run_strided_copy<W, uint32_t>(c, words, src, dst, stream);
    else run_strided_copy<W, int64_t>(c, words, src, dst, stream);
  });
  FB_CUDA(cudaGetLastError());
}

void launch_gather(const GatherArgs& args, const void* x, const void* indices, void* out, cudaStream_t stream) {
  if (args.outer * args.count * args.inner_bytes == 0) return;
  // Whole rows move in the widest words their length and the two addresses allow.
  const int64_t w = widest_word(1, {args.inner_bytes, address(x), address(out)});
  by_size<true>(w, [&](auto word) {
    using W = decltype(word);
    by_index_type(args.int32_indices, [&](auto index) {
      using Idx = decltype(index);
      const int64_t inner = args.inner_bytes / w;
      gather_kernel<W, Idx><<<blocks_for(args.outer * args.count * inner), kThreads, 0, stream>>>(
          args, inner, static_cast<const W*>(x), static_cast<const Idx*>(indices), static_cast<W*>(out));
    });
  });
  FB_CUDA(cudaGetLastError());
}

void launch_gather_elements(const GatherElementsArgs& args, const void* x, const void* indices, void* out, cudaStream_t stream) {
  const int64_t n = product(args.dims, args.rank);
  launch_elements(n, args.elem_bytes, [&](auto word, unsigned blocks) {
    using W = decltype(word);
    by_index_type(args.int32_indices, [&](auto index) {
      using Idx = decltype(index);
      gather_elements_kernel<W, Idx><<<blocks, kThreads, 0, stream>>>(args, n, static_cast<const W*>(x),
                                                                      static_cast<const Idx*>(indices), static_cast<W*>(out));
    });
  });
}

void launch_table_gather(const TableGatherArgs& args, const void* x, const void* fill, void* out, cudaStream_t stream) {
  const int64_t n = product(args.out_dims, args.rank);
  launch_elements(n, args.elem_bytes, [&](auto word, unsigned blocks) {
    using W = decltype(word);
    table_gather_kernel<W><<<blocks, kThreads, 0, stream>>>(args, n, static_cast<const W*>(x), static_cast<const W*>(fill),
                                                            static_cast<W*>(out));
  });
}

void launch_trilu(const TriluArgs& args, const void* x, const void* k_device, void* out, cudaStream_t stream) {
  launch_elements(args.mats * args.rows * args.cols, args.elem_bytes, [&](auto word, unsigned blocks) {
    using W = decltype(word);
    trilu_kernel<W><<<blocks, kThreads, 0, stream>>>(args, static_cast<const W*>(x), static_cast<const int64_t*>(k_device),
                                                     static_cast<W*>(out));
  });
}

void launch_resize(const ResizeArgs& args, const void* x, void* out, cudaStream_t stream) {
  const int64_t n = product(args.out_dims, args.rank);
  if (n == 0) return;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    resize_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(args, n, static_cast<const T*>(x), static_cast<T*>(out));
  };
  switch (args.elem) {
    case Elem::F32: run(float{}); break;
    case Elem::F16: run(__half{}); break;
    case Elem::BF16: run(__nv_bfloat16{}); break;
  }
  FB_CUDA(cudaGetLastError());
}

}  // namespace fb::cuda
