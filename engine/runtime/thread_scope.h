// Binds a case's thread count to both thread pools the engine runs on: oneTBB (our own
// kernels) and OpenMP (Debian's oneDNN). Work runs inside a task_arena of that size with
// the OpenMP thread count set on the calling thread. OpenMP workers must not keep
// spinning long after a oneDNN call while TBB workers want the same cores; the fusebench
// binary sets OMP_WAIT_POLICY=passive with a short GOMP_SPINCOUNT before libgomp starts
// (see harness/cli/main.cpp).
#pragma once
#include <tbb/task_arena.h>

#include <utility>

namespace fb {

void set_openmp_threads(int threads);

class ThreadScope {
 public:
  explicit ThreadScope(int threads) : threads_(threads < 1 ? 1 : threads), arena_(threads_) {}
  int threads() const { return threads_; }
  template <typename F>
  decltype(auto) run(F&& f) {
    return arena_.execute([&]() -> decltype(auto) {
      set_openmp_threads(threads_);
      return std::forward<F>(f)();
    });
  }

 private:
  int threads_;
  tbb::task_arena arena_;
};

}  // namespace fb
