#include <cfloat>

#include "engine/backend/cuda/device_math.cuh"
#include "engine/backend/cuda/epilogue_kernels.h"

namespace fb::cuda {

namespace {

template <typename I>
__global__ void epilogue_kernel(Elem ye, void* y, Epilogue e, I n) {
  const I inner = I(e.inner), channels = I(e.channels);
  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < n; i += I(gridDim.x) * I(blockDim.x)) {
    const I ch = inner == 1 ? i % channels : (i / inner) % channels;
    float v = load(y, ye, i);
    if (e.c) {
      const I outer = i / (inner * channels);
      v += e.beta * load(e.c, e.c_elem, outer * e.c_outer_stride + ch * e.c_channel_stride);
    }
    if (e.bias) v += load(e.bias, e.bias_elem, ch);
    if (e.residual) v += load(e.residual, ye, i);
    v = activate(e.act, v, e.lo, e.hi);
    if (e.multiplier) v *= load(e.multiplier, ye, i);
    store(y, ye, i, v);
  }
}

// One block per row: the row's max, then its sum, by block reductions in shared memory.
__global__ void attention_softmax_kernel(const float* scores, const void* mask, Elem me, MaskStrides ms, int64_t heads,
                                         int64_t sq, int64_t sk, Elem pe, void* p) {
  const int64_t row = blockIdx.x;  // b·H·Sq + h·Sq + q
  const int64_t q = row % sq, h = (row / sq) % heads, b = row / (sq * heads);
  const float* s = scores + row * sk;
  const int64_t m0 = b * ms.b + h * ms.h + q * ms.q;  // the row's first mask element
  auto m_at = [&](int64_t k) { return mask ? load(mask, me, m0 + k * ms.k) : 0.f; };
  __shared__ float red[32];
  auto block_reduce = [&](float v, bool is_max) {
    for (int o = 16; o > 0; o /= 2) {
      const float w = __shfl_xor_sync(0xffffffffu, v, o);
      v = is_max ? fmaxf(v, w) : v + w;
    }
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
    __syncthreads();
    const int warps = (blockDim.x + 31) / 32;
    float r = threadIdx.x < warps ? red[threadIdx.x] : (is_max ? -FLT_MAX : 0.f);
    if (threadIdx.x < 32)
      for (int o = 16; o > 0; o /= 2) {
        const float w = __shfl_xor_sync(0xffffffffu, r, o);
        r = is_max ? fmaxf(r, w) : r + w;
      }
    if (threadIdx.x == 0) red[0] = r;
    __syncthreads();
    r = red[0];
    __syncthreads();
    return r;
  };
  float mx = -FLT_MAX;
  for (int64_t k = threadIdx.x; k < sk; k += blockDim.x) mx = fmaxf(mx, s[k] + m_at(k));
  mx = block_reduce(mx, true);
  float sum = 0.f;
  for (int64_t k = threadIdx.x; k < sk; k += blockDim.x) sum += expf(s[k] + m_at(k) - mx);
  sum = block_reduce(sum, false);
  const float inv = 1.f / sum;
  for (int64_t k = threadIdx.x; k < sk; k += blockDim.x)
    store(p, pe, row * sk + k, expf(s[k] + m_at(k) - mx) * inv);
}

}  // namespace

void launch_epilogue(Elem y_elem, void* y, const Epilogue& e, cudaStream_t stream) {
  const int64_t n = e.outer * e.channels * e.inner;
  if (n == 0) return;
  const int threads = 256;
  const int64_t blocks = std::min<int64_t>((n + threads - 1) / threads, 65535 * 4);
  if (fits_32_bits(n)) epilogue_kernel<int32_t><<<unsigned(blocks), threads, 0, stream>>>(y_elem, y, e, int32_t(n));
  else epilogue_kernel<int64_t><<<unsigned(blocks), threads, 0, stream>>>(y_elem, y, e, n);
  FB_CUDA(cudaGetLastError());
}

void launch_attention_softmax(const float* scores, const void* mask, Elem mask_elem, const MaskStrides& ms, int64_t batch,
                              int64_t heads, int64_t sq, int64_t sk, Elem p_elem, void* p, cudaStream_t stream) {
  const int64_t rows = batch * heads * sq;
  if (rows == 0) return;
  const int threads = sk >= 256 ? 256 : sk >= 128 ? 128 : 64;
  attention_softmax_kernel<<<unsigned(rows), threads, 0, stream>>>(scores, mask, mask_elem, ms, heads, sq, sk, p_elem, p);
  FB_CUDA(cudaGetLastError());
}

}  // namespace fb::cuda
