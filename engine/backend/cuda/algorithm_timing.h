// Timing a library call's candidate algorithms at build, as TensorRT's tactic timing: each
// candidate run on the layer's own buffers and clocked the way the engine will pay for it.
// Used by the convolution (cuDNN) and matrix-product (cuBLASLt) layers.
#pragma once
#include <cuda_runtime.h>

#include <functional>

namespace fb::cuda {

// The GPU's time of one call, recorded four times in a CUDA graph and replayed: what an
// engine replayed as a graph pays for it, with no host launch cost in it. Negative where
// the call fails (returns false) or cannot be recorded.
double graph_replay_ms(cudaStream_t stream, const std::function<bool()>& call);

// The time of one call launched back to back from the host, after one untimed call: the
// larger of the GPU's time and the host's launch cost, as an eager engine pays. Negative
// where the call fails.
double eager_ms(cudaStream_t stream, const std::function<bool()>& call);

}  // namespace fb::cuda
