#include "engine/runtime/thread_scope.h"

#include <omp.h>
#include <sched.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "engine/ir/error.h"

namespace fb {

void set_openmp_threads(int threads) { omp_set_num_threads(threads); }

void pin_this_thread(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::string names;
  for (int c : cpus) {
    CPU_SET(c, &set);
    names += (names.empty() ? "" : ",") + std::to_string(c);
  }
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    throw Error("cannot pin a thread to CPUs " + names + ": " + std::strerror(errno));
}

namespace {
// Pins each thread as it enters the arena (TBB's workers move between arenas).
class ArenaPinner : public tbb::task_scheduler_observer {
 public:
  ArenaPinner(tbb::task_arena& arena, std::vector<int> cpus) : tbb::task_scheduler_observer(arena), cpus_(std::move(cpus)) {
    sched_getaffinity(0, sizeof all_, &all_);  // what a worker gets back when it leaves
    observe(true);
  }
  ~ArenaPinner() override { observe(false); }
  void on_scheduler_entry(bool) override {
    try {
      pin_this_thread(cpus_);
    } catch (const Error&) {
      // A worker left unpinned only shares a core; the serving thread's own pin reports it.
    }
  }
  void on_scheduler_exit(bool worker) override {
    if (worker) sched_setaffinity(0, sizeof all_, &all_);  // TBB's workers serve other arenas next
  }

 private:
  std::vector<int> cpus_;
  cpu_set_t all_;
};
}  // namespace

ThreadScope::ThreadScope(int threads, std::vector<int> cpus)
    : threads_(threads < 1 ? 1 : threads), arena_(threads_), cpus_(std::move(cpus)) {
  if (!cpus_.empty()) {
    arena_.initialize();
    pinner_ = std::make_unique<ArenaPinner>(arena_, cpus_);
  }
}

ThreadScope::~ThreadScope() = default;

}  // namespace fb
