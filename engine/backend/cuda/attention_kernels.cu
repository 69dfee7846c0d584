// The fused attention kernel of attention_kernels.h. A block of 4 warps takes 64 queries of
// one (batch, head); each warp owns 16 of them. Per tile of 64 keys: K and V staged in
// shared memory, each warp's 16×64 scores by WMMA into shared memory, the online softmax
// (running max m and sum l per query; the output rescaled by exp(m_old - m_new)) done
// row by row across the warp's lanes (the running max and sum in registers), then P·V by
// WMMA added into the warp's float32 output. WMMA's accumulator layout is opaque, so the
// rescaling happens on rows in shared memory.
#include <mma.h>

#include <algorithm>
#include <cmath>

#include "engine/backend/cuda/attention_kernels.h"
#include "engine/backend/cuda/cuda_device.h"
#include "engine/backend/cuda/device_math.cuh"

namespace fb::cuda {

namespace {

using namespace nvcuda;

constexpr int kWarps = 4, kRows = 16, kQueries = kWarps * kRows, kKeys = 64;
// Shared-memory rows padded by 16 bytes (8 halves, 4 floats): unpadded, every row of a tile
// starts on the same bank and WMMA's loads and stores of 16 rows conflict 8 ways.
constexpr int kPadT = 8, kPadF = 4;

// Shared memory, in order: Q [64][D], K [64][D], V [64][D] (T); per warp: scores or P·V
// [16][max(64, D)] (float), P [16][64] (T), O [16][D] (float); rows padded as above.
template <typename T>
size_t shared_bytes(int64_t d) {
  const size_t wide = size_t(std::max<int64_t>(kKeys, d)) + kPadF;
  return 3 * kQueries * size_t(d + kPadT) * sizeof(T) +
         kWarps * (kRows * wide * sizeof(float) + kRows * (kKeys + kPadT) * sizeof(T) + kRows * size_t(d) * sizeof(float));
}

// Rows of 16-bit elements, 8 at a time (16 bytes): a head's row is a multiple of 16
// elements at a multiple of 32 bytes (hidden = H·D, D a multiple of 16), zeros past `rows`.
template <typename T>
__device__ __forceinline__ void load_rows(T* dst, int ld, const T* src, int64_t first, int64_t rows, int64_t row_stride,
                                          int d, int count) {
  const int vectors = d / 8;
  for (int i = threadIdx.x; i < count * vectors; i += blockDim.x) {
    const int r = i / vectors, c = (i % vectors) * 8;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (first + r < rows) v = *reinterpret_cast<const uint4*>(src + (first + r) * row_stride + c);
    *reinterpret_cast<uint4*>(dst + r * ld + c) = v;
  }
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <typename T>
__global__ void flash_attention_kernel(const FlashAttention a) {
  extern __shared__ __align__(32) unsigned char smem[];
  const int d = int(a.dim), wide = (d > kKeys ? d : kKeys) + kPadF, ld = d + kPadT, ldp = kKeys + kPadT;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t bh = blockIdx.y, b = bh / a.heads, h = bh % a.heads, q0 = int64_t(blockIdx.x) * kQueries;
  const int64_t hidden = a.heads * a.dim;
  // Carved in shared_bytes' order; every piece a multiple of 32 bytes, as WMMA needs.
  unsigned char* next = smem;
  auto take = [&next](size_t bytes) {
    unsigned char* p = next;
    next += bytes;
    return p;
  };
  T* q_s = reinterpret_cast<T*>(take(kQueries * ld * sizeof(T)));
  T* k_s = reinterpret_cast<T*>(take(kKeys * ld * sizeof(T)));
  T* v_s = reinterpret_cast<T*>(take(kKeys * ld * sizeof(T)));
  float* s_w = reinterpret_cast<float*>(take(kWarps * kRows * wide * sizeof(float))) + warp * kRows * wide;
  T* p_w = reinterpret_cast<T*>(take(kWarps * kRows * ldp * sizeof(T))) + warp * kRows * ldp;
  float* o_w = reinterpret_cast<float*>(take(kWarps * kRows * d * sizeof(float))) + warp * kRows * d;
  // This (batch, head)'s rows: element (s, c) of q at q_bh[s·hidden + c].
  const T* q_bh = static_cast<const T*>(a.q) + b * a.sq * hidden + h * a.dim;
  const T* k_bh = static_cast<const T*>(a.k) + b * a.sk * hidden + h * a.dim;
  const T* v_bh = static_cast<const T*>(a.v) + b * a.sk * hidden + h * a.dim;

  load_rows(q_s, ld, q_bh, q0, a.sq, hidden, d, kQueries);
  for (int i = lane; i < kRows * d; i += 32) o_w[i] = 0.f;
  __syncthreads();
  // The warp's 16 queries as WMMA operands, once: D/16 fragments of 16×16.
  constexpr int kMaxSteps = 128 / 16;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> qa[kMaxSteps];
#pragma unroll
  for (int kk = 0; kk < kMaxSteps; ++kk)
    if (kk < d / 16) wmma::load_matrix_sync(qa[kk], q_s + warp * kRows * ld + kk * 16, ld);

  // Running max and sum of each of the 16 rows, the same in every lane (warp reductions).
  float m[kRows], l[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) m[r] = -INFINITY, l[r] = 0.f;

  for (int64_t k0 = 0; k0 < a.sk; k0 += kKeys) {
    __syncthreads();  // every warp done with the previous tile's K and V
    load_rows(k_s, ld, k_bh, k0, a.sk, hidden, d, kKeys);
    load_rows(v_s, ld, v_bh, k0, a.sk, hidden, d, kKeys);
    __syncthreads();

    // Scores: this warp's 16 queries against the tile's 64 keys.
    for (int j = 0; j < kKeys / 16; ++j) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.f);
#pragma unroll
      for (int kk = 0; kk < kMaxSteps; ++kk) {
        if (kk >= d / 16) break;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> kb;  // Kᵀ: K's rows as columns
        wmma::load_matrix_sync(kb, k_s + j * 16 * ld + kk * 16, ld);
        wmma::mma_sync(acc, qa[kk], kb, acc);
      }
      wmma::store_matrix_sync(s_w + j * 16, acc, wide, wmma::mem_row_major);
    }
    __syncwarp();

    // The online softmax, row by row, each lane two of the tile's columns (lane, lane + 32):
    // consecutive lanes, consecutive addresses. Keys past the end count as -inf.
    const int64_t key0 = k0 + lane, key1 = k0 + lane + 32;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int64_t query = q0 + warp * kRows + r;
      const bool query_in = query < a.sq;
      const int64_t mask_row = b * a.ms.b + h * a.ms.h + (query_in ? query : 0) * a.ms.q;
      auto score = [&](int64_t key, int c) {
        if (key >= a.sk) return -INFINITY;
        float x = s_w[r * wide + c] * a.scale;
        if (a.mask && query_in) x += load(a.mask, a.mask_elem, mask_row + key * a.ms.k);
        return x;
      };
      const float x0 = score(key0, lane), x1 = score(key1, lane + 32);
      const float m_old = m[r], m_new = fmaxf(m_old, warp_max(fmaxf(x0, x1)));
      const float m_ref = m_new == -INFINITY ? 0.f : m_new;  // a row masked so far: no NaN from -inf - -inf
      const T p0 = T(__expf(x0 - m_ref)), p1 = T(__expf(x1 - m_ref));
      p_w[r * ldp + lane] = p0;
      p_w[r * ldp + lane + 32] = p1;
      const float alpha = __expf(m_old - m_ref);  // 0 for the first tile (m_old = -inf)
      m[r] = m_new;
      l[r] = l[r] * alpha + warp_sum(float(p0) + float(p1));  // the sum of what P·V multiplies
      for (int c = lane; c < d; c += 32) o_w[r * d + c] *= alpha;
    }
    __syncwarp();

    // P·V: the warp's 16×64 probabilities against the tile's 64×D values, added to O.
    for (int j = 0; j < d / 16; ++j) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.f);
#pragma unroll
      for (int kk = 0; kk < kKeys / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> pa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> vb;
        wmma::load_matrix_sync(pa, p_w + kk * 16, ldp);
        wmma::load_matrix_sync(vb, v_s + kk * 16 * ld + j * 16, ld);
        wmma::mma_sync(acc, pa, vb, acc);
      }
      wmma::store_matrix_sync(s_w + j * 16, acc, wide, wmma::mem_row_major);
    }
    __syncwarp();
    for (int i = lane; i < kRows * d; i += 32) o_w[i] += s_w[(i / d) * wide + i % d];
    __syncwarp();
  }

  // Each row divided by its sum, written where the queries came from.
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int64_t query = q0 + warp * kRows + r;
    if (query >= a.sq) break;
    T* y = static_cast<T*>(a.y) + (b * a.sq + query) * hidden + h * a.dim;
    const float inv = 1.f / l[r];
    for (int c = lane; c < d; c += 32) y[c] = T(o_w[r * d + c] * inv);
  }
}

template <typename T>
void prepare(int64_t d) {
  FB_CUDA(cudaFuncSetAttribute(flash_attention_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               int(shared_bytes<T>(d))));
}

template <typename T>
void launch(const FlashAttention& a, cudaStream_t stream) {
  const dim3 grid(unsigned((a.sq + kQueries - 1) / kQueries), unsigned(a.batch * a.heads));
  flash_attention_kernel<T><<<grid, kWarps * 32, shared_bytes<T>(a.dim), stream>>>(a);
  FB_CUDA(cudaGetLastError());
}

}  // namespace

bool flash_attention_runs(Elem elem, int64_t head_dim, int64_t batch, int64_t heads, int64_t queries,
                          int multiprocessors) {
  const int64_t blocks = batch * heads * ((queries + kQueries - 1) / kQueries);
  return (elem == Elem::F16 || elem == Elem::BF16) && head_dim > 0 && head_dim % 16 == 0 && head_dim <= 128 &&
         blocks >= 2 * int64_t(multiprocessors);
}

void prepare_flash_attention(Elem elem, int64_t head_dim) {
  if (elem == Elem::F16) prepare<__half>(head_dim);
  else prepare<__nv_bfloat16>(head_dim);
}

void launch_flash_attention(const FlashAttention& a, cudaStream_t stream) {
  if (a.batch * a.heads == 0 || a.sq == 0) return;
  if (a.elem == Elem::F16) launch<__half>(a, stream);
  else launch<__nv_bfloat16>(a, stream);
}

}  // namespace fb::cuda
