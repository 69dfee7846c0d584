// The CUDA elementwise kernel: one "map" kernel evaluates a small program over inputs
// broadcast to the output's shape, one output element per thread step. Every elementwise
// op is such a program: Relu is one unary instruction, Add one binary, Where one select,
// Cast one copy, Sum a fold of binaries, and the engine's fused ElementwiseChain its own
// program ([kind, fn, a, b] as engine/ops/elementwise_chain.h stores it). Values are read
// from any element type into the compute type (float, or int64 where every operand is an
// integer or bool) and written in the output's type.
//
// Also the element access the other CUDA kernel files share (load/store by DType,
// compiled only under nvcc).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/ir/dtype.h"
#include "engine/ops/elementwise.h"

namespace fb::cuda {

inline constexpr int kMaxDims = 8;
// A fused chain holds at most 64 instructions (elementwise_chain_fusion.cpp), each adding
// at most one input after the first's two.
inline constexpr int kMaxMapInputs = 66;
inline constexpr int kMaxMapInstrs = 64;

enum class MapKind : uint8_t {
  Unary,       // fn: UnaryFn, on a
  Binary,      // fn: BinaryFn, on a and b
  Activation,  // fn: Activation, on a with parameters p0, p1
  Compare,     // fn: Compare, on a and b (Not on a): 1 or 0
  Select,      // a != 0 ? b : c (Where)
  Copy,        // a (Cast, Identity-like folds)
};

// The activations with parameters (engine/ops/activation_ops.cpp), Mean's division, and
// IsNegative (1 where v < 0, else 0: PRelu's select).
enum class Activation : uint8_t { LeakyRelu, HardSigmoid, Elu, Selu, Celu, ThresholdedRelu, Shrink, Clip, DivideBy, IsNegative };
enum class Compare : uint8_t { Equal, Less, Greater, LessOrEqual, GreaterOrEqual, And, Or, Xor, Not };

struct MapInstr {
  MapKind kind;
  uint8_t fn;
  uint8_t a, b, c;  // registers: inputs first, then one per instruction
  double p0, p1;    // Activation parameters (double: Clip's bounds on int64 stay exact)
};

// How an input's element offset follows the output index.
enum class Access : uint8_t { Same, Scalar, Strided };

struct MapOperand {
  const void* data = nullptr;
  DType dtype = DType::Float32;
  Access access = Access::Same;
  int64_t strides[kMaxDims] = {};  // per merged output dim, 0 where broadcast (Strided only)
};

// Passed by value to the kernel: the small form for the common one- to four-input ops
// keeps the launch's parameter block short; chains up to the limits use the large one.
template <int Inputs, int Instrs>
struct MapParams {
  static constexpr int kInputs = Inputs, kInstrs = Instrs;
  int64_t n = 0;                 // output elements
  int rank = 0;                  // merged output dims (used when any input is Strided)
  int64_t dims[kMaxDims] = {};
  bool any_strided = false;
  bool integer = false;          // compute in int64, else float
  int n_inputs = 0, n_instrs = 0;
  MapOperand in[Inputs];
  MapInstr prog[Instrs];
  void* out = nullptr;
  DType out_dtype = DType::Float32;
  bool bf16_truncate = false;    // ONNX Cast to bfloat16 truncates; everything else rounds to nearest even
};
using SmallMap = MapParams<4, 8>;
using LargeMap = MapParams<kMaxMapInputs, kMaxMapInstrs>;

void launch_map(const SmallMap& p, cudaStream_t stream);
void launch_map(const LargeMap& p, cudaStream_t stream);

// Grid for a grid-stride loop over n elements with `threads` per block.
inline unsigned grid_for(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return unsigned(blocks < 1 ? 1 : blocks > 8192 ? 8192 : blocks);
}

}  // namespace fb::cuda

#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

namespace fb::cuda {

// Element i of `p` (of type t) as C (float or int64_t); bool reads as 0 or 1.
template <typename C>
__device__ __forceinline__ C load_as(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::Float32: return C(static_cast<const float*>(p)[i]);
    case DType::Float16: return C(__half2float(static_cast<const __half*>(p)[i]));
    case DType::BFloat16: return C(__bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]));
    case DType::Float64: return C(static_cast<const double*>(p)[i]);
    case DType::Int64: return C(static_cast<const int64_t*>(p)[i]);
    case DType::Int32: return C(static_cast<const int32_t*>(p)[i]);
    case DType::Int16: return C(static_cast<const int16_t*>(p)[i]);
    case DType::Int8: return C(static_cast<const int8_t*>(p)[i]);
    case DType::UInt8: return C(static_cast<const uint8_t*>(p)[i]);
    case DType::UInt16: return C(static_cast<const uint16_t*>(p)[i]);
    case DType::UInt32: return C(static_cast<const uint32_t*>(p)[i]);
    case DType::UInt64: return C(static_cast<const uint64_t*>(p)[i]);
    case DType::Bool: return C(static_cast<const uint8_t*>(p)[i] != 0);
    default: return C(0);
  }
}

__device__ __forceinline__ float load_float(const void* p, DType t, int64_t i) { return load_as<float>(p, t, i); }

// bfloat16 by truncation, as engine/ops/cast_ops.cpp (NaN kept a NaN).
__device__ __forceinline__ uint16_t bf16_truncated(float v) {
  const uint32_t bits = __float_as_uint(v);
  return isnan(v) ? uint16_t((bits >> 16) | 0x40) : uint16_t(bits >> 16);
}

// Writes v (float or int64_t) as element i of `p` in type t: 16-bit floats rounded to
// nearest even (or bf16 truncated), integers converted as static_cast does, bool as v != 0.
template <typename C>
__device__ __forceinline__ void store_as(void* p, DType t, int64_t i, C v, bool bf16_truncate = false) {
  switch (t) {
    case DType::Float32: static_cast<float*>(p)[i] = float(v); return;
    case DType::Float16: static_cast<__half*>(p)[i] = __float2half_rn(float(v)); return;
    case DType::BFloat16:
      if (bf16_truncate) static_cast<uint16_t*>(p)[i] = bf16_truncated(float(v));
      else static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(float(v));
      return;
    case DType::Float64: static_cast<double*>(p)[i] = double(v); return;
    case DType::Int64: static_cast<int64_t*>(p)[i] = int64_t(v); return;
    case DType::Int32: static_cast<int32_t*>(p)[i] = int32_t(v); return;
    case DType::Int16: static_cast<int16_t*>(p)[i] = int16_t(v); return;
    case DType::Int8: static_cast<int8_t*>(p)[i] = int8_t(v); return;
    case DType::UInt8: static_cast<uint8_t*>(p)[i] = uint8_t(v); return;
    case DType::UInt16: static_cast<uint16_t*>(p)[i] = uint16_t(v); return;
    case DType::UInt32: static_cast<uint32_t*>(p)[i] = uint32_t(v); return;
    case DType::UInt64: static_cast<uint64_t*>(p)[i] = uint64_t(v); return;
    case DType::Bool: static_cast<uint8_t*>(p)[i] = uint8_t(v != C(0)); return;
    default: return;
  }
}

__device__ __forceinline__ void store_float(void* p, DType t, int64_t i, float v) { store_as<float>(p, t, i, v); }

// softplus(x) = log(1 + e^x), written so that neither branch overflows.
__device__ __forceinline__ float softplus(float x) { return x > 0.f ? x + log1pf(expf(-x)) : log1pf(expf(x)); }

// f(x) as engine/ops/elementwise.cpp defines it, with the accurate CUDA functions. For
// int64 only Neg, Abs, Relu and Sign mean something (the layers refuse the others).
template <typename C>
__device__ __forceinline__ C unary_value(UnaryFn f, C x) {
  if constexpr (!std::is_floating_point_v<C>) {
    switch (f) {
      case UnaryFn::Neg: return -x;
      case UnaryFn::Abs: return x < 0 ? -x : x;
      case UnaryFn::Relu: return x > 0 ? x : 0;
      case UnaryFn::Sign: return C((x > 0) - (x < 0));
      default: return x;
    }
  } else {
    switch (f) {
      case UnaryFn::Relu: return x > 0.f ? x : 0.f;
      case UnaryFn::Sigmoid: return 1.f / (1.f + expf(-x));
      case UnaryFn::Tanh: return tanhf(x);
      case UnaryFn::Erf: return erff(x);
      case UnaryFn::Sqrt: return sqrtf(x);
      case UnaryFn::Exp: return expf(x);
      case UnaryFn::Log: return logf(x);
      case UnaryFn::Neg: return -x;
      case UnaryFn::Abs: return fabsf(x);
      case UnaryFn::Reciprocal: return 1.f / x;
      case UnaryFn::Gelu: return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
      case UnaryFn::Sin: return sinf(x);
      case UnaryFn::Cos: return cosf(x);
      case UnaryFn::Tan: return tanf(x);
      case UnaryFn::Asin: return asinf(x);
      case UnaryFn::Acos: return acosf(x);
      case UnaryFn::Atan: return atanf(x);
      case UnaryFn::Sinh: return sinhf(x);
      case UnaryFn::Cosh: return coshf(x);
      case UnaryFn::Asinh: return asinhf(x);
      case UnaryFn::Acosh: return acoshf(x);
      case UnaryFn::Atanh: return atanhf(x);
      case UnaryFn::Ceil: return ceilf(x);
      case UnaryFn::Floor: return floorf(x);
      case UnaryFn::Round: return rintf(x);  // to nearest, ties to even, as ONNX asks
      case UnaryFn::Sign: return float((x > 0.f) - (x < 0.f));
      case UnaryFn::Softplus: return softplus(x);
      case UnaryFn::Softsign: return x / (1.f + fabsf(x));
      case UnaryFn::Mish: return x * tanhf(softplus(x));
      case UnaryFn::HardSwish: {
        const float t = x / 6.f + 0.5f;
        return x * (t < 0.f ? 0.f : t > 1.f ? 1.f : t);
      }
      case UnaryFn::GeluTanh:  // 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
        return 0.5f * x * (1.f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
      case UnaryFn::Count: break;
    }
    return x;
  }
}

}  // namespace fb::cuda
#endif
