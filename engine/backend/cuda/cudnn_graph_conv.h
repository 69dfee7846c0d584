// A convolution planned through cuDNN's graph (backend) API: one operation graph, the
// engine configs cuDNN's instant heuristic lists (for full fp32, only those without tensor
// cores or down-converted inputs: TF32 off), made into an execution plan once at build, and
// one cudnnBackendExecute on a variant pack bound to the layer's buffers per run. Which plan:
// - untimed (the GPU reference): the first that finalizes within the workspace, as PyTorch
//   runs its convolutions with cudnn.benchmark off;
// - timed (an engine: TensorRT's tactics): the fastest of the first kTimedPlans that do, each
//   run on the layer's buffers and clocked as the engine pays (algorithm_timing.h): its GPU
//   time replayed in a CUDA graph, or back-to-back launches for an eager engine. The choice is
//   remembered per convolution shape for the process, so execution contexts and rebuilt
//   engines do not time again.
// The legacy API (cudnnConvolutionForward) costs the host far more per call, and its
// heuristic picks among eight algorithm families only (docs/gpu.md has the figures).
#pragma once
#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend/cuda/cuda_context.h"

namespace fb::cuda {

struct GraphConvSpec {
  cudnnDataType_t type = CUDNN_DATA_FLOAT;  // x, w and y's (the computation is float)
  bool fma_only = true;                     // full fp32: no tensor-core engines
  std::vector<int64_t> x_dims, x_strides, w_dims, w_strides, y_dims, y_strides;  // [N, C, spatial...]
  std::vector<int64_t> pad, stride, dilation;                                    // per spatial dim
  float beta = 0.f;  // 1: y holds a residual the convolution adds to
};

enum class PlanChoice { HeuristicFirst, TimedInGraph, TimedEager };

class CudnnGraphConv {
 public:
  // The plan for these buffers, or nullptr where cuDNN lists no engine that finalizes (the
  // caller keeps the legacy API); `why` then says what was refused.
  static constexpr int kTimedPlans = 24;
  static std::unique_ptr<CudnnGraphConv> make(const CudaContext& ctx, const GraphConvSpec& spec, const void* x,
                                              const void* w, void* y, PlanChoice choice, std::string& why);
  ~CudnnGraphConv();
  CudnnGraphConv(const CudnnGraphConv&) = delete;
  CudnnGraphConv& operator=(const CudnnGraphConv&) = delete;

  void run() const;  // y = conv(x, w) (+ beta·y), on ctx.stream
  int64_t engine() const { return engine_; }  // cuDNN's global index of the chosen engine
  bool timed() const { return timed_; }

 private:
  explicit CudnnGraphConv(const CudaContext& ctx) : ctx_(ctx) {}
  const CudaContext& ctx_;
  std::vector<cudnnBackendDescriptor_t> owned_;  // every descriptor made, destroyed last first
  cudnnBackendDescriptor_t plan_ = nullptr, pack_ = nullptr;
  int64_t engine_ = -1;
  bool timed_ = false;
};

}  // namespace fb::cuda
