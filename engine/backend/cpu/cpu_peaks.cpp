// The CPU's peaks for profile's "% of peak": a large oneDNN float32 matmul and a large
// parallel copy, on the caller's threads (its task arena).
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <vector>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/matmul.h"

namespace fb {

namespace {

// The duration of one try at full speed: its wall time, or, when the process's CPU time
// per thread is shorter, that. On a shared machine the OS takes the cores away mid-try
// (wall time grows, CPU time does not), and a peak measured by wall time alone would then
// be a fraction of the real one, putting busy layers at "400% of peak".
struct TryTimer {
  int threads;
  std::chrono::steady_clock::time_point wall0 = std::chrono::steady_clock::now();
  double cpu0 = process_cpu_seconds();
  static double process_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
  }
  double seconds() const {
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    const double cpu = (process_cpu_seconds() - cpu0) / std::max(threads, 1);
    return cpu > 0 ? std::min(wall, cpu) : wall;
  }
};

}  // namespace

std::optional<MachinePeaks> CpuBackend::measure_peaks(int threads) const {
  MachinePeaks peaks;
  const int64_t n = 1024;
  Tensor a(DType::Float32, {n, n}), b(DType::Float32, {n, n}), c(DType::Float32, {n, n});
  MatMulKernel k(MatMulSpec{{n, n}, {n, n}});
  k.run(a.data<float>(), b.data<float>(), nullptr, c.data<float>());
  std::vector<double> t;
  for (int i = 0; i < 5; ++i) {
    const TryTimer timer{threads};
    k.run(a.data<float>(), b.data<float>(), nullptr, c.data<float>());
    t.push_back(timer.seconds());
  }
  peaks.gflops = k.flops() / *std::min_element(t.begin(), t.end()) / 1e9;
  // Bandwidth: a parallel copy of 256 MiB (read + write counted), best of 3.
  const size_t bytes = size_t(256) << 20;
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  std::vector<double> tb;
  for (int i = 0; i < 3; ++i) {
    const TryTimer timer{threads};
    tbb::parallel_for(tbb::blocked_range<size_t>(0, bytes, size_t(1) << 20), [&](const tbb::blocked_range<size_t>& r) {
      std::memcpy(dst.data() + r.begin(), src.data() + r.begin(), r.size());
    });
    tb.push_back(timer.seconds());
  }
  peaks.gbps = 2.0 * double(bytes) / *std::min_element(tb.begin(), tb.end()) / 1e9;
  return peaks;
}

}  // namespace fb
