#include "harness/load/load_generator.h"

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <cmath>
#include <thread>

#include "engine/ir/error.h"
#include "harness/stats/random.h"
#include "harness/util/format_number.h"

namespace fb {

int64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::vector<int64_t> poisson_arrivals(double qps, uint64_t seed, int64_t min_queries, int64_t min_duration_ns) {
  if (!(qps > 0)) throw Error("a Poisson schedule needs a positive rate");
  Rng rng(seed);
  std::vector<int64_t> at{0};
  double t_s = 0;
  while (int64_t(at.size()) < min_queries || at.back() < min_duration_ns) {
    t_s += -std::log1p(-rng.uniform()) / qps;
    at.push_back(std::llround(t_s * 1e9));
  }
  return at;
}

namespace {

// Waking from a sleep takes tens of microseconds on a VM: sleep until this long before the
// issue time, then spin on the serving thread's own (otherwise idle) core.
constexpr int64_t kSpinNs = 100000;

void wait_until(int64_t when_ns) {
  if (when_ns - monotonic_ns() > kSpinNs) {
    const int64_t wake = when_ns - kSpinNs;
    timespec ts{time_t(wake / 1000000000), long(wake % 1000000000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
  }
  while (monotonic_ns() < when_ns) {
  }
}

// The state the serving threads share. Scheduled runs (server, offline) know every issue
// time in advance; streamed ones (single-, multi-stream) learn the next query's from the
// thread that completes the current one, which alone then grows `samples` and publishes.
struct Shared {
  const LoadSettings& s;
  bool streamed = false;
  int64_t per_query = 1;
  int64_t t0 = 0;
  int64_t bound_ns = 0, max_ns = 0, min_duration_ns = 0;
  int64_t over_limit = -1;
  std::vector<LoadSample> samples{};
  std::atomic<int64_t> next{0};       // the next sample to take
  std::atomic<int64_t> published{0};  // samples [0, published) have their issue times
  std::atomic<int64_t> signal{0};     // bumped (and waited on) at each publication and at the stop
  std::atomic<int64_t> remaining{0};  // streamed: samples of the current query not yet done
  std::atomic<int64_t> over{0};
  std::atomic<bool> stop{false};
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::string stopped{};  // written by the thread that stops the run, read after the join
  std::atomic_flag stop_said = ATOMIC_FLAG_INIT;

  void halt(const std::string& why) {
    if (!stop_said.test_and_set()) stopped = why;
    wake_all(true);
  }

  void wake_all(bool stopping) {
    if (stopping) stop.store(true);
    signal.fetch_add(1);
    signal.notify_all();
  }

  // Streamed: the completer of a query issues the next at `end` (ns), or ends the run.
  void next_query(int64_t end) {
    const int64_t queries = int64_t(samples.size()) / per_query;
    if (queries >= s.min_queries && end >= min_duration_ns) return wake_all(true);
    for (int64_t k = 0; k < per_query; ++k) samples.push_back(LoadSample{queries, end});
    remaining.store(per_query);
    published.fetch_add(per_query);
    wake_all(false);
  }

  void serve(int instance, const LoadInstance& in) {
    ready.fetch_add(1);
    while (!go.load()) go.wait(false);
    for (;;) {
      if (stop.load()) return;
      const int64_t k = next.fetch_add(1);
      if (streamed) {
        for (;;) {  // the signal is read first, so a publication or stop after the checks still wakes the wait
          const int64_t seen = signal.load();
          if (stop.load()) return;
          if (published.load() > k) break;
          signal.wait(seen);
        }
      } else if (k >= int64_t(samples.size())) {
        return;
      }
      LoadSample& q = samples[size_t(k)];
      const int64_t due = t0 + q.issue_ns;
      const int64_t taken = monotonic_ns();
      if (taken - t0 > max_ns) {
        halt("stopped after max_duration_ms (" + format_number("%g", s.max_duration_ms) + " ms): the pool fell behind");
        return;
      }
      q.queued = taken > due;
      if (!q.queued) wait_until(due);
      q.start_ns = monotonic_ns() - t0;
      in.infer();
      q.end_ns = monotonic_ns() - t0;
      q.instance = instance;
      if (over_limit >= 0 && q.end_ns - q.issue_ns > bound_ns && over.fetch_add(1) + 1 > over_limit) {
        halt("stopped early: more than " + std::to_string(over_limit) + " queries over the latency bound, which " +
             std::to_string(samples.size()) + " queries cannot pass");
        return;
      }
      if (streamed && remaining.fetch_sub(1) == 1) {
        // The last to count down need not have ended last: the query ended with its latest sample.
        int64_t ended = 0;
        for (int64_t j = k - k % per_query; j < k - k % per_query + per_query; ++j) ended = std::max(ended, samples[size_t(j)].end_ns);
        next_query(ended);
      }
    }
  }
};

}  // namespace

LoadRun run_load(const LoadSettings& s, std::vector<LoadInstance>& instances, const std::vector<int64_t>& schedule,
                 int64_t over_bound_limit) {
  if (instances.empty()) throw Error("a load run needs at least one instance");
  Shared sh{s};
  sh.streamed = s.scenario == "single-stream" || s.scenario == "multi-stream";
  sh.per_query = s.scenario == "multi-stream" ? s.samples_per_query : 1;
  sh.bound_ns = std::llround(s.latency_bound_ms * 1e6);
  sh.max_ns = std::llround(s.max_duration_ms * 1e6);
  sh.min_duration_ns = std::llround(s.min_duration_ms * 1e6);
  sh.over_limit = s.scenario == "server" ? over_bound_limit : -1;
  if (sh.streamed) {
    sh.samples.reserve(size_t(std::max<int64_t>(s.min_queries, 1) * sh.per_query));
    sh.next_query(0);
  } else {
    sh.samples.reserve(schedule.size());
    for (size_t k = 0; k < schedule.size(); ++k)
      sh.samples.push_back(LoadSample{int64_t(k), s.scenario == "offline" ? 0 : schedule[k]});
  }
  // Single-stream has one query in flight: one serving thread.
  const size_t threads = s.scenario == "single-stream" ? 1 : instances.size();
  std::vector<std::thread> pool;
  for (size_t i = 0; i < threads; ++i)
    pool.emplace_back([&, i] {
      const LoadInstance& in = instances[i];
      if (in.scope) in.scope([&] { sh.serve(int(i), in); });
      else sh.serve(int(i), in);
    });
  while (sh.ready.load() < int(threads)) std::this_thread::yield();
  sh.t0 = monotonic_ns() + 200000;  // every thread is waiting: start 0.2 ms from now
  sh.go.store(true);
  sh.go.notify_all();
  for (std::thread& t : pool) t.join();
  LoadRun run;
  run.queries = int64_t(sh.samples.size()) / sh.per_query;
  run.samples = std::move(sh.samples);
  run.stopped = sh.stopped;
  return run;
}

double measure_load_overhead_ns(int64_t queries) {
  LoadSettings s;
  s.scenario = "offline";
  std::vector<LoadInstance> idle{LoadInstance{[] {}, nullptr}};
  const LoadRun run = run_load(s, idle, std::vector<int64_t>(size_t(queries), 0));
  const int64_t first = run.samples.front().start_ns, last = run.samples.back().end_ns;
  return double(last - first) / double(queries);
}

}  // namespace fb
