// Binds a case's thread count to both thread pools the engine runs on: oneTBB (our own
// kernels) and OpenMP (Debian's oneDNN). Work runs inside a task_arena of that size with
// the OpenMP thread count set on the calling thread. OpenMP workers must not keep
// spinning long after a oneDNN call while TBB workers want the same cores; the fusebench
// binary sets OMP_WAIT_POLICY=passive with a short GOMP_SPINCOUNT before libgomp starts
// (see harness/cli/main.cpp).
#pragma once
#include <tbb/task_arena.h>
#include <tbb/task_scheduler_observer.h>

#include <memory>
#include <utility>
#include <vector>

namespace fb {

void set_openmp_threads(int threads);
// Pins the calling thread to `cpus` (sched_setaffinity); fb::Error naming them when refused.
void pin_this_thread(const std::vector<int>& cpus);

class ThreadScope {
 public:
  explicit ThreadScope(int threads) : threads_(threads < 1 ? 1 : threads), arena_(threads_) {}
  // The same on these cores only: the calling thread and every TBB worker that joins the
  // arena are pinned to them, and OpenMP's team, made by the calling thread, inherits its
  // mask. Several scopes on disjoint cores are what a pool of engine instances runs in.
  ThreadScope(int threads, std::vector<int> cpus);
  ~ThreadScope();
  int threads() const { return threads_; }
  template <typename F>
  decltype(auto) run(F&& f) {
    return arena_.execute([&]() -> decltype(auto) {
      if (!cpus_.empty()) pin_this_thread(cpus_);
      set_openmp_threads(threads_);
      return std::forward<F>(f)();
    });
  }

 private:
  int threads_;
  tbb::task_arena arena_;
  std::vector<int> cpus_;
  std::unique_ptr<tbb::task_scheduler_observer> pinner_;
};

}  // namespace fb
