// The GPU's peaks for profile's "% of peak", on the GPU's own clock (CUDA events): a large
// float32 matrix product in full fp32 (cuBLAS, TF32 off, as the fp32 layers run) and a
// device-to-device copy (read + write counted), the best of a few tries each.
#include <algorithm>
#include <vector>

#include "engine/backend/cuda/cuda_backend.h"

namespace fb::cuda {

std::optional<MachinePeaks> CudaBackend::measure_peaks(int threads) const {
  (void)threads;  // the host's threads do not change what the GPU does
  FB_CUDA(cudaSetDevice(ctx_.device));
  auto best_ms = [&](int tries, auto&& enqueue) {
    std::unique_ptr<DeviceTimer> timer = make_timer();
    enqueue();  // warm: clocks up, the library's kernels chosen
    std::vector<double> ms;
    for (int i = 0; i < tries; ++i) {
      timer->start();
      enqueue();
      timer->stop();
      ms.push_back(timer->elapsed_ms());
    }
    return *std::min_element(ms.begin(), ms.end());
  };
  MachinePeaks peaks;
  const int n = 4096;
  DeviceMemory a(size_t(n) * n * sizeof(float)), b(size_t(n) * n * sizeof(float)), c(size_t(n) * n * sizeof(float));
  FB_CUDA(cudaMemsetAsync(a.data(), 0, size_t(n) * n * sizeof(float), ctx_.stream));
  FB_CUDA(cudaMemsetAsync(b.data(), 0, size_t(n) * n * sizeof(float), ctx_.stream));
  const float one = 1.f, zero = 0.f;
  const double gemm_ms = best_ms(5, [&] {
    FB_CUDA(cublasSgemm(ctx_.blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, static_cast<const float*>(a.data()), n,
                        static_cast<const float*>(b.data()), n, &zero, static_cast<float*>(c.data()), n));
  });
  peaks.gflops = 2.0 * double(n) * n * n / (gemm_ms * 1e-3) / 1e9;
  const size_t bytes = size_t(1) << 30;
  DeviceMemory src(bytes), dst(bytes);
  const double copy_ms = best_ms(5, [&] { FB_CUDA(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, ctx_.stream)); });
  peaks.gbps = 2.0 * double(bytes) / (copy_ms * 1e-3) / 1e9;
  return peaks;
}

}  // namespace fb::cuda
