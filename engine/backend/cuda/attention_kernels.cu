// The fused attention kernel of attention_kernels.h, in FlashAttention-2's form: a block of
// 4 warps takes 64 queries of one (batch, head), each warp 16 of them, and keeps everything
// of its queries in registers. Per tile of 64 keys, staged with V in shared memory: the
// warp's 16×64 scores by mma.sync (m16n8k16, float32 accumulators) from Q's fragments
// (loaded once) and K's (ldmatrix), the online softmax on those accumulators (each row's
// max and sum across the 4 lanes that hold it), the probabilities rounded to the layer's
// type and reused in registers as the A operand of P·V, V's fragments by ldmatrix.trans,
// and the output accumulated in registers, rescaled by exp(m_old - m_new) per row. Only
// the final rows, divided by their sums, are stored.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <type_traits>
#include <string>

#include "engine/backend/cuda/attention_kernels.h"
#include "engine/backend/cuda/cuda_device.h"
#include "engine/backend/cuda/device_math.cuh"
#include "engine/ir/error.h"

namespace fb::cuda {

namespace {

constexpr int kWarps = 4, kRows = 16, kQueries = kWarps * kRows, kKeys = 64;
// Shared-memory rows padded by 16 bytes: ldmatrix's 8 row addresses then fall on 8
// different groups of 4 banks.
constexpr int kPad = 8;

// Shared memory: Q [64][D], K [64][D], V [64][D], rows padded as above.
template <typename T>
size_t shared_bytes(int64_t d) {
  return 3 * kQueries * size_t(d + kPad) * sizeof(T);
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

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Four 8×8 matrices of 16-bit elements; lanes 8i..8i+7 name the rows of matrix i.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}

__device__ __forceinline__ void ldmatrix_x2(uint32_t (&r)[2], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(shared_address(row)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}

// c += a·b for a 16×16 A (row-major), a 16×8 B (column-major), 16-bit operands of type T,
// float32 accumulators.
template <typename T>
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<T, __half>)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The pair as an mma operand register; `sum` gets what the rounded pair adds up to (what
// P·V multiplies).
template <typename T>
__device__ __forceinline__ uint32_t pack_rounded(float x, float y, float& sum) {
  const typename Pair<T>::type p = Pair<T>::make(x, y);
  const float2 f = Pair<T>::back(p);
  sum += f.x + f.y;
  return *reinterpret_cast<const uint32_t*>(&p);
}

// One 32-bit store: dst is a pair's first element, at an even column of an even-length row.
template <typename T>
__device__ __forceinline__ void store_pair(T* dst, float x, float y) {
  *reinterpret_cast<typename Pair<T>::type*>(dst) = Pair<T>::make(x, y);
}

__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

// The accumulator layout of m16n8k16 (PTX ISA, "mma.m16n8k16"): lane L holds rows L/4 and
// L/4 + 8, columns 2·(L%4) and 2·(L%4) + 1 of each 16×8 tile; c[0], c[1] the first row's
// pair, c[2], c[3] the second's. Each row lives in the 4 lanes of one quad.
template <typename T, int D>
__global__ void __launch_bounds__(kWarps * 32) flash_attention_kernel(const FlashAttention a) {
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr int ld = D + kPad, kSteps = D / 16, kOutTiles = D / 8, kKeyTiles = kKeys / 8;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, quad_row = lane / 4, quad_col = 2 * (lane % 4);
  const int64_t bh = blockIdx.y, b = bh / a.heads, h = bh % a.heads, q0 = int64_t(blockIdx.x) * kQueries;
  const int64_t hidden = a.heads * a.dim;
  T* q_s = reinterpret_cast<T*>(smem);
  T* k_s = q_s + kQueries * ld;
  T* v_s = k_s + kKeys * ld;
  // This (batch, head)'s rows: element (s, c) of q at q_bh[s·hidden + c].
  const T* q_bh = static_cast<const T*>(a.q) + b * a.sq * hidden + h * a.dim;
  const T* k_bh = static_cast<const T*>(a.k) + b * a.sk * hidden + h * a.dim;
  const T* v_bh = static_cast<const T*>(a.v) + b * a.sk * hidden + h * a.dim;

  load_rows(q_s, ld, q_bh, q0, a.sq, hidden, D, kQueries);
  __syncthreads();
  // The warp's 16 queries as A operands, once: lanes 0-15 name rows 0-15 at column 0 of
  // each 16-wide step, lanes 16-31 the same rows at column 8.
  uint32_t qa[kSteps][4];
#pragma unroll
  for (int s = 0; s < kSteps; ++s) ldmatrix_x4(qa[s], q_s + (warp * kRows + lane % 16) * ld + s * 16 + (lane / 16) * 8);

  const int64_t rows[2] = {q0 + warp * kRows + quad_row, q0 + warp * kRows + quad_row + 8};
  int64_t mask_row[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) mask_row[i] = b * a.ms.b + h * a.ms.h + (rows[i] < a.sq ? rows[i] : 0) * a.ms.q;
  float o[kOutTiles][4] = {};
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};  // l: this lane's share of each row's sum

  for (int64_t k0 = 0; k0 < a.sk; k0 += kKeys) {
    __syncthreads();  // every warp done with the previous tile's K and V
    load_rows(k_s, ld, k_bh, k0, a.sk, hidden, D, kKeys);
    load_rows(v_s, ld, v_bh, k0, a.sk, hidden, D, kKeys);
    __syncthreads();

    // Scores: 8 tiles of 8 keys. K's rows are B's columns: lanes 0-7 name the tile's 8 keys
    // at the step's column 0, lanes 8-15 at column 8.
    float s[kKeyTiles][4] = {};
#pragma unroll
    for (int t = 0; t < kKeyTiles; ++t)
#pragma unroll
      for (int st = 0; st < kSteps; ++st) {
        uint32_t kb[2];
        ldmatrix_x2(kb, k_s + (t * 8 + lane % 8) * ld + st * 16 + ((lane / 8) % 2) * 8);
        mma_16816<T>(s[t], qa[st], kb[0], kb[1]);
      }

    // Scaled and masked; keys past the end -inf. The new running max of each row.
    float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int t = 0; t < kKeyTiles; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = e / 2;
        const int64_t key = k0 + t * 8 + quad_col + e % 2;
        float x = -INFINITY;
        if (key < a.sk) {
          x = s[t][e] * a.scale;
          if (a.mask && rows[i] < a.sq) x += load(a.mask, a.mask_elem, mask_row[i] + key * a.ms.k);
        }
        s[t][e] = x;
        tile_max[i] = fmaxf(tile_max[i], x);
      }
    float ref[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const float m_new = fmaxf(m[i], quad_max(tile_max[i]));
      ref[i] = m_new == -INFINITY ? 0.f : m_new;  // a row masked so far: no NaN from -inf - -inf
      const float alpha = __expf(m[i] - ref[i]);  // 0 for the first tile (m = -inf)
      m[i] = m_new;
      l[i] *= alpha;
#pragma unroll
      for (int j = 0; j < kOutTiles; ++j) o[j][2 * i] *= alpha, o[j][2 * i + 1] *= alpha;
    }

    // P·V, 16 keys at a time: two score tiles are one A operand (m16n8k16's A layout is two
    // accumulator tiles side by side). V's rows are B's k: lanes 0-7 name keys 0-7, lanes
    // 8-15 keys 8-15, at output column 8·j; lanes 16-31 the same keys at column 8·(j + 1).
#pragma unroll
    for (int kk = 0; kk < kKeys / 16; ++kk) {
      uint32_t pa[4];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const float* st = s[2 * kk + half];
        pa[2 * half] = pack_rounded<T>(__expf(st[0] - ref[0]), __expf(st[1] - ref[0]), l[0]);
        pa[2 * half + 1] = pack_rounded<T>(__expf(st[2] - ref[1]), __expf(st[3] - ref[1]), l[1]);
      }
#pragma unroll
      for (int j = 0; j < kOutTiles; j += 2) {
        uint32_t vb[4];
        ldmatrix_x4_trans(vb, v_s + (kk * 16 + lane % 16) * ld + (j + lane / 16) * 8);
        mma_16816<T>(o[j], pa, vb[0], vb[1]);
        mma_16816<T>(o[j + 1], pa, vb[2], vb[3]);
      }
    }
  }

  // Each row divided by its sum, written where the queries came from.
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const float sum = quad_sum(l[i]);
    if (rows[i] >= a.sq) continue;
    const float inv = 1.f / sum;
    T* y = static_cast<T*>(a.y) + (b * a.sq + rows[i]) * hidden + h * a.dim;
#pragma unroll
    for (int j = 0; j < kOutTiles; ++j) store_pair(y + j * 8 + quad_col, o[j][2 * i] * inv, o[j][2 * i + 1] * inv);
  }
}

// The head dims the kernel is built for: every multiple of 16 up to 128.
template <typename T, typename F>
void with_head_dim(int64_t d, F&& f) {
  switch (d) {
    case 16: return f(flash_attention_kernel<T, 16>);
    case 32: return f(flash_attention_kernel<T, 32>);
    case 48: return f(flash_attention_kernel<T, 48>);
    case 64: return f(flash_attention_kernel<T, 64>);
    case 80: return f(flash_attention_kernel<T, 80>);
    case 96: return f(flash_attention_kernel<T, 96>);
    case 112: return f(flash_attention_kernel<T, 112>);
    case 128: return f(flash_attention_kernel<T, 128>);
  }
  throw Error("fused attention: head dim " + std::to_string(d) + " is not a multiple of 16 up to 128");
}

template <typename T>
void prepare(int64_t d) {
  with_head_dim<T>(d, [d](auto kernel) {
    FB_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared_bytes<T>(d))));
  });
}

template <typename T>
void launch(const FlashAttention& a, cudaStream_t stream) {
  const dim3 grid(unsigned((a.sq + kQueries - 1) / kQueries), unsigned(a.batch * a.heads));
  with_head_dim<T>(a.dim, [&](auto kernel) {
    kernel<<<grid, kWarps * 32, shared_bytes<T>(a.dim), stream>>>(a);
  });
  FB_CUDA(cudaGetLastError());
}

}  // namespace
bool flash_attention_runs(Elem elem, int64_t head_dim, int64_t batch, int64_t heads, int64_t queries,
                          int multiprocessors) {
  const int64_t blocks = batch * heads * ((queries + kQueries - 1) / kQueries);
  return (elem == Elem::F16 || elem == Elem::BF16) && head_dim > 0 && head_dim % 16 == 0 && head_dim <= 128 && blocks >= 2 * int64_t(multiprocessors);
}

void prepare_flash_attention(Elem elem, int64_t head_dim) {
  if (elem == Elem::F16) return prepare<__half>(head_dim);
  if (elem == Elem::BF16) return prepare<__nv_bfloat16>(head_dim);
  throw Error("fused attention runs fp16 and bf16 layers only");
}

void launch_flash_attention(const FlashAttention& a, cudaStream_t stream) {
  if (a.batch * a.heads == 0 || a.sq == 0) return;
  if (a.elem == Elem::BF16) return launch<__nv_bfloat16>(a, stream);
  launch<__half>(a, stream);
}

}  // namespace fb::cuda
