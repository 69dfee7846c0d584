#include "engine/backend/cuda/algorithm_timing.h"

namespace fb::cuda {

namespace {

// Milliseconds between two events around `launches`, or negative where a launch failed.
double timed_ms(cudaStream_t stream, int launches, const std::function<bool()>& launch) {
  cudaEvent_t start = nullptr, stop = nullptr;
  double ms = -1;
  if (cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&stop) == cudaSuccess) {
    bool ok = cudaEventRecord(start, stream) == cudaSuccess;
    for (int i = 0; i < launches && ok; ++i) ok = launch();
    float elapsed = 0;
    if (ok && cudaEventRecord(stop, stream) == cudaSuccess && cudaEventSynchronize(stop) == cudaSuccess &&
        cudaEventElapsedTime(&elapsed, start, stop) == cudaSuccess)
      ms = elapsed;
  }
  if (start) cudaEventDestroy(start);
  if (stop) cudaEventDestroy(stop);
  return ms;
}

}  // namespace

double graph_replay_ms(cudaStream_t stream, const std::function<bool()>& call) {
  constexpr int kCallsPerGraph = 4, kReplays = 5;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  double ms = -1;
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess) {
    bool ok = true;
    for (int i = 0; i < kCallsPerGraph && ok; ++i) ok = call();
    ok = cudaStreamEndCapture(stream, &graph) == cudaSuccess && ok;
    if (ok && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess && cudaGraphLaunch(exec, stream) == cudaSuccess) {
      const double total = timed_ms(stream, kReplays, [&] { return cudaGraphLaunch(exec, stream) == cudaSuccess; });
      if (total >= 0) ms = total / (kCallsPerGraph * kReplays);
    }
  }
  if (exec) cudaGraphExecDestroy(exec);
  if (graph) cudaGraphDestroy(graph);
  cudaGetLastError();  // a refused recording leaves no error behind for the next call
  return ms;
}

double eager_ms(cudaStream_t stream, const std::function<bool()>& call) {
  constexpr int kCalls = 20;
  double ms = -1;
  if (call() && cudaStreamSynchronize(stream) == cudaSuccess) {
    const double total = timed_ms(stream, kCalls, call);
    if (total >= 0) ms = total / kCalls;
  }
  cudaGetLastError();
  return ms;
}

}  // namespace fb::cuda
