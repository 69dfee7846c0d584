#include "harness/measure/load_case.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "engine/ir/error.h"
#include "engine/runtime/thread_scope.h"
#include "harness/load/load_early_stopping.h"
#include "harness/stats/statistics.h"
#include "harness/util/format_number.h"

namespace fb {

std::vector<int> usable_cpus() {
  cpu_set_t set;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

void check_pool_fits(const CaseSpec& spec, const std::string& where) {
  if (spec.load.is_default()) return;
  const size_t cores = usable_cpus().size();
  const size_t need = size_t(spec.load.instances) * size_t(spec.threads);
  if (need > cores)
    throw Error(where + ": field 'instances': a pool of " + std::to_string(spec.load.instances) + " instances x " +
                std::to_string(spec.threads) + " threads needs " + std::to_string(need) + " cores; this process may use " +
                std::to_string(cores) + " (case '" + spec.label() + "')");
}

namespace {

constexpr int kWarmupRuns = 3;

// The pool: instance 0 is the engine itself, the others contexts sharing its weights; each
// serves on its own ThreadScope, pinned to its own cores when the settings ask. On a GPU
// each context has a stream of its own (Engine::make_context), driven by its serving
// thread, and a query ends when its outputs are back in host memory, as a client's do.
struct Pool {
  std::vector<std::unique_ptr<Engine>> contexts;
  std::vector<std::unique_ptr<ThreadScope>> scopes;
  std::vector<LoadInstance> instances;
};

Pool make_pool(Engine& engine, const std::vector<Tensor>& inputs, const CaseSpec& spec) {
  Pool p;
  const std::vector<int> cpus = usable_cpus();
  for (int i = 0; i < spec.load.instances; ++i) {
    Engine* e = &engine;
    if (i > 0) {
      p.contexts.push_back(engine.make_context());
      e = p.contexts.back().get();
    }
    std::vector<int> mine;
    if (spec.load.pin)
      for (int k = 0; k < spec.threads; ++k) mine.push_back(cpus.at(size_t(i * spec.threads + k)));
    p.scopes.push_back(mine.empty() ? std::make_unique<ThreadScope>(spec.threads)
                                    : std::make_unique<ThreadScope>(spec.threads, mine));
    ThreadScope* scope = p.scopes.back().get();
    Engine* run_on = e;
    const bool on_device = engine.kernels().backend->device() != Device::Host;
    p.instances.push_back(LoadInstance{
        [run_on, &inputs, on_device] {
          run_on->run(inputs);
          if (on_device) run_on->outputs();
        },
        [scope, run_on, &inputs](const std::function<void()>& serve) {
          scope->run([&] {
            for (int w = 0; w < kWarmupRuns; ++w) run_on->run(inputs);  // on its own cores, before the clock starts
            serve();
          });
        }});
  }
  return p;
}

// One run at the settings' rate (server) or as the scenario issues.
LoadStep run_once(const LoadSettings& s, int threads, Pool& pool, double overhead_ns, double service_ms) {
  std::vector<int64_t> schedule;
  int64_t over_limit = -1;
  const int64_t min_ns = std::llround(s.min_duration_ms * 1e6);
  if (s.scenario == "server") {
    schedule = poisson_arrivals(s.target_qps, s.seed, s.min_queries, min_ns);
    over_limit = max_passing_over(int64_t(schedule.size()), percentile_of(s));
  } else if (s.scenario == "offline") {
    // LoadGen's offline query covers the minimum duration at the rate the pool is expected
    // to reach: enough samples for it, and at least min_queries.
    const double expected_qps = double(s.instances) / (service_ms / 1e3);
    const auto n = std::max<int64_t>(s.min_queries, int64_t(std::ceil(expected_qps * s.min_duration_ms / 1e3 * 1.1)));
    schedule.assign(size_t(n), 0);
  }
  LoadRun run = run_load(s, pool.instances, schedule, over_limit);
  LoadStep step;
  step.figures = load_figures(s, threads, run);
  step.figures.overhead_ns = overhead_ns;
  step.samples = std::move(run.samples);
  return step;
}

// The highest rate whose run is valid: doubling (or halving) from a first guess until the
// valid and the invalid are bracketed, then bisecting to 5%, ten runs at most.
void peak_search(LoadSettings s, int threads, Pool& pool, double overhead_ns, double service_ms, LoadResult& out,
                 const ProgressFn& progress) {
  constexpr int kMaxSteps = 10;
  double lo = 0, hi = 0;
  double rate = s.target_qps > 0 ? s.target_qps : 0.5 * double(s.instances) / (service_ms / 1e3);
  for (int step = 0; step < kMaxSteps; ++step) {
    s.target_qps = std::round(rate * 10) / 10;
    if (progress) progress("peak search: step " + std::to_string(step + 1) + ", " + format_number("%g", s.target_qps) + " qps");
    out.steps.push_back(run_once(s, threads, pool, overhead_ns, service_ms));
    const bool valid = out.steps.back().figures.valid;
    (valid ? lo : hi) = s.target_qps;
    if (valid) out.peak_qps = std::isnan(out.peak_qps) ? lo : std::max(out.peak_qps, lo);
    if (lo > 0 && hi > 0 && hi / lo <= 1.05) break;
    rate = hi == 0 ? 2 * lo : lo == 0 ? hi / 2 : (lo + hi) / 2;
    if (rate < 0.1) break;  // not even a query every ten seconds passes
  }
}

}  // namespace

LoadResult serve_load(Engine& engine, const std::vector<Tensor>& inputs, const CaseSpec& spec, const ProgressFn& progress) {
  check_pool_fits(spec, spec.scenario_file.empty() ? spec.scenario : spec.scenario_file);
  Pool pool = make_pool(engine, inputs, spec);
  if (progress) progress("measuring the load loop's own cost");
  const double overhead_ns = measure_load_overhead_ns();
  // One instance's service time, single-stream: what offline's query size and the peak
  // search's first rate start from.
  LoadSettings probe = spec.load;
  probe.scenario = "single-stream";
  probe.min_queries = 20;
  probe.min_duration_ms = 0;
  std::vector<LoadInstance> first{pool.instances.front()};
  const LoadRun probed = run_load(probe, first, {});
  std::vector<double> service;
  for (const LoadSample& q : probed.samples) service.push_back(double(q.end_ns - q.start_ns) / 1e6);
  const double service_ms = std::max(1e-3, percentile(service, 0.5));

  LoadResult out;
  if (progress) progress(spec.load.scenario + " load on " + std::to_string(spec.load.instances) + " instance(s)");
  if (spec.load.scenario == "server" && spec.load.peak_search)
    peak_search(spec.load, spec.threads, pool, overhead_ns, service_ms, out, progress);
  else
    out.steps.push_back(run_once(spec.load, spec.threads, pool, overhead_ns, service_ms));
  return out;
}

void load_measurement(const LoadResult& load, CaseResult& r) {
  const LoadStep& step = reported_step(load);
  r.engine = Measurement{};
  r.engine.executor = "engine";
  r.engine.samples_ms = query_latencies_ms(step.samples);
  r.engine.stats = compute_stats(r.engine.samples_ms);
  r.engine.items_per_s = step.figures.samples_per_s * double(r.spec.batch);
  r.reference = Measurement{};
  r.reference.executor = "reference";
  r.stop_reason = "load";
  r.interference.timed_wall_ms = step.figures.duration_ms;
}

}  // namespace fb
