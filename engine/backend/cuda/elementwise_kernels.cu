// The map kernel (elementwise_kernels.h): a grid-stride loop over the output, each step
// reading its inputs through their broadcast strides, running the program in registers and
// writing one element. Instantiated for float and int64 compute, 32- and 64-bit indices
// (64-bit division is a long software sequence on the GPU) and one instruction or many
// (a single instruction needs no register file, which would live in local memory).
#include <type_traits>

#include "engine/backend/cuda/elementwise_kernels.h"

namespace fb::cuda {

namespace {

template <typename C>
__device__ __forceinline__ C binary_value(BinaryFn f, C a, C b) {
  switch (f) {
    case BinaryFn::Add: return a + b;
    case BinaryFn::Sub: return a - b;
    case BinaryFn::Mul: return a * b;
    case BinaryFn::Div:
      // Integer division by zero is an Error on the CPU; a kernel cannot raise one: 0.
      if constexpr (std::is_floating_point_v<C>) return a / b;
      else return b == 0 ? C(0) : a / b;
    case BinaryFn::Pow:
      if constexpr (std::is_floating_point_v<C>) return b == 2.f ? a * a : powf(a, b);
      else return C(pow(double(a), double(b)));  // as the CPU's mixed-type Pow, in double
    case BinaryFn::Min:
      if constexpr (std::is_floating_point_v<C>) return fminf(a, b);
      else return a < b ? a : b;
    case BinaryFn::Max:
      if constexpr (std::is_floating_point_v<C>) return fmaxf(a, b);
      else return a > b ? a : b;
    case BinaryFn::Count: break;
  }
  return a;
}

// engine/ops/activation_ops.cpp's formulas (Clip: min(max(v, lo), hi) as std::min/max
// order them, so NaN stays NaN and lo > hi gives hi).
template <typename C>
__device__ __forceinline__ C activation_value(Activation f, C v, double p0, double p1) {
  const C a = C(p0), b = C(p1);
  if (f == Activation::Clip) {
    const C at_least = v < a ? a : v;  // std::max(v, lo)
    return b < at_least ? b : at_least;  // std::min(.., hi)
  }
  if (f == Activation::DivideBy) return v / a;
  if (f == Activation::IsNegative) return C(v < C(0));
  if constexpr (!std::is_floating_point_v<C>) {
    return v;  // the layers give integers Clip, DivideBy and IsNegative only
  } else {
    switch (f) {
      case Activation::LeakyRelu: return v >= 0.f ? v : a * v;
      case Activation::HardSigmoid: return fmaxf(0.f, fminf(1.f, a * v + b));
      case Activation::Elu: return v >= 0.f ? v : a * (expf(v) - 1.f);
      case Activation::Selu: return v > 0.f ? b * v : b * (a * expf(v) - a);  // p0 alpha, p1 gamma
      case Activation::Celu: return fmaxf(0.f, v) + fminf(0.f, a * (expf(v / a) - 1.f));
      case Activation::ThresholdedRelu: return v > a ? v : 0.f;
      case Activation::Shrink: return v < -a ? v + b : v > a ? v - b : 0.f;  // p0 lambd, p1 bias
      default: return v;
    }
  }
}

template <typename C>
__device__ __forceinline__ C compare_value(Compare f, C a, C b) {
  switch (f) {
    case Compare::Equal: return C(a == b);
    case Compare::Less: return C(a < b);
    case Compare::Greater: return C(a > b);
    case Compare::LessOrEqual: return C(a <= b);
    case Compare::GreaterOrEqual: return C(a >= b);
    case Compare::And: return C(a != C(0) && b != C(0));
    case Compare::Or: return C(a != C(0) || b != C(0));
    case Compare::Xor: return C((a != C(0)) != (b != C(0)));
    case Compare::Not: return C(a == C(0));
  }
  return a;
}

template <typename C>
__device__ __forceinline__ C evaluate(const MapInstr& in, C a, C b, C c) {
  switch (in.kind) {
    case MapKind::Unary: return unary_value<C>(UnaryFn(in.fn), a);
    case MapKind::Binary: return binary_value<C>(BinaryFn(in.fn), a, b);
    case MapKind::Activation: return activation_value<C>(Activation(in.fn), a, in.p0, in.p1);
    case MapKind::Compare: return compare_value<C>(Compare(in.fn), a, b);
    case MapKind::Select: return a != C(0) ? b : c;
    case MapKind::Copy: return a;
  }
  return a;
}

template <typename C, typename I, bool Single, class P>
__global__ void map_kernel(const P p) {
  const I n = I(p.n);
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += I(gridDim.x) * blockDim.x) {
    // Each input's element offset. Unrolled over the small form's inputs, so the offsets
    // stay in registers; the dims walk from the innermost out.
    I off[P::kInputs];
#pragma unroll(P::kInputs <= 4 ? P::kInputs : 1)
    for (int k = 0; k < P::kInputs; ++k) off[k] = k < p.n_inputs && p.in[k].access == Access::Same ? i : 0;
    if (p.any_strided) {
      I rest = i;
      for (int d = p.rank - 1; d >= 0; --d) {
        const I dim = I(p.dims[d]);
        const I coord = d ? rest % dim : rest;
        rest /= dim;
#pragma unroll(P::kInputs <= 4 ? P::kInputs : 1)
        for (int k = 0; k < P::kInputs; ++k)
          if (k < p.n_inputs && p.in[k].access == Access::Strided) off[k] += coord * I(p.in[k].strides[d]);
      }
    }
    auto load = [&](int k) { return load_as<C>(p.in[k].data, p.in[k].dtype, off[k]); };
    C result;
    if constexpr (Single) {
      // One instruction reading registers 0, 1, 2 in order (single_instruction checks).
      const MapInstr& ins = p.prog[0];
      const C a = load(0);
      const C b = p.n_inputs > 1 ? load(1) : C(0);
      const C c = p.n_inputs > 2 ? load(2) : C(0);
      result = evaluate<C>(ins, a, b, c);
    } else {
      C reg[P::kInputs + P::kInstrs];
      for (int k = 0; k < p.n_inputs; ++k) reg[k] = load(k);
      for (int j = 0; j < p.n_instrs; ++j) {
        const MapInstr& ins = p.prog[j];
        reg[p.n_inputs + j] = evaluate<C>(ins, reg[ins.a], reg[ins.b], reg[ins.c]);
      }
      result = reg[p.n_inputs + p.n_instrs - 1];
    }
    store_as<C>(p.out, p.out_dtype, int64_t(i), result, p.bf16_truncate);
  }
}

// A small program whose one instruction reads the inputs in order, at most three (every
// one-op layer: Relu on 0, Add on 0 and 1, Where on 0, 1 and 2).
template <class P>
bool single_instruction(const P& p) {
  if (p.n_instrs != 1 || p.n_inputs > 3 || P::kInputs > 4) return false;
  const MapInstr& in = p.prog[0];
  return in.a == 0 && in.b <= 1 && in.c <= 2;
}

template <typename C, typename I, class P>
void launch_with(const P& p, cudaStream_t stream) {
  constexpr int kThreads = 256;
  if (single_instruction(p)) map_kernel<C, I, true, P><<<grid_for(p.n, kThreads), kThreads, 0, stream>>>(p);
  else map_kernel<C, I, false, P><<<grid_for(p.n, kThreads), kThreads, 0, stream>>>(p);
}

template <class P>
void launch(const P& p, cudaStream_t stream) {
  if (p.n == 0) return;
  // 32-bit indices while the grid-stride loop's i + stride cannot wrap.
  const bool narrow = p.n < (int64_t(1) << 31);
  if (p.integer) narrow ? launch_with<int64_t, uint32_t>(p, stream) : launch_with<int64_t, int64_t>(p, stream);
  else narrow ? launch_with<float, uint32_t>(p, stream) : launch_with<float, int64_t>(p, stream);
}

}  // namespace

void launch_map(const SmallMap& p, cudaStream_t stream) { launch(p, stream); }
void launch_map(const LargeMap& p, cudaStream_t stream) { launch(p, stream); }

}  // namespace fb::cuda
