// Load scenarios (issue 45): LoadGen's early-stopping figures, the seeded Poisson schedule
// reproduced exactly, a server run against a synthetic executor of known service time
// whose queueing delay matches M/D/c theory, and the loop's own cost per query.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <numeric>
#include <queue>
#include <thread>

#include <gtest/gtest.h>

#include "engine/backend/backend.h"
#include "harness/cases/case.h"
#include "harness/load/load_early_stopping.h"
#include "harness/load/load_figures.h"
#include "harness/load/load_generator.h"
#include "harness/measure/interference.h"
#include "scratch_dir.h"
#include "shell_command.h"
#include "sql_exec.h"

namespace {

// LoadGen's published figures (MLPerf Inference's early stopping; its result summaries).
TEST(EarlyStopping, NeedsLoadGensQueryCounts) {
  EXPECT_EQ(fb::min_passing_queries(0, 0.99), 459);    // p99 with no query over the bound
  EXPECT_EQ(fb::min_passing_queries(1, 0.90) + 1, 64);  // "Processed at least 64 queries" (p90)
  EXPECT_EQ(fb::min_passing_queries(1, 0.99) + 1, 662); // the p99 floor
  EXPECT_EQ(fb::min_passing_queries(0, 0.90), 44);      // 0.9^44 < 0.01 <= 0.9^43
}

TEST(EarlyStopping, DiscardsWhatLoadGenDiscards) {
  // Summaries of single-stream p90 runs: 2048 queries discard 172, 2116 discard 178, 2145 discard 181.
  for (auto [n, discarded] : {std::pair<int64_t, int64_t>{2048, 172}, {2116, 178}, {2145, 181}}) {
    std::vector<double> lat(static_cast<size_t>(n));
    std::iota(lat.begin(), lat.end(), 1.0);  // latencies 1..n: the claim is a rank
    const fb::PercentileClaim c = fb::claim_percentile(lat, 0.90);
    EXPECT_TRUE(c.enough);
    EXPECT_EQ(c.discarded, discarded) << n;
    EXPECT_EQ(c.latency, double(n - discarded)) << n;  // the highest latency kept
  }
  const fb::PercentileClaim few = fb::claim_percentile(std::vector<double>(63, 1.0), 0.90);
  EXPECT_FALSE(few.enough);
  EXPECT_EQ(few.needed, 64);
}

TEST(EarlyStopping, ServerVerdictCountsQueriesOverTheBound) {
  std::vector<double> lat(459, 1.0);
  fb::OverBoundVerdict v = fb::over_bound_verdict(lat, 2.0, 0.99);
  EXPECT_TRUE(v.passed);
  EXPECT_EQ(v.over, 0);
  lat.push_back(3.0);  // one over: now 661 under are needed
  v = fb::over_bound_verdict(lat, 2.0, 0.99);
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.over, 1);
  EXPECT_EQ(v.needed, 662);
  EXPECT_EQ(v.more, 662 - 460);
  EXPECT_EQ(fb::max_passing_over(662, 0.99), 1);
  EXPECT_EQ(fb::max_passing_over(458, 0.99), -1);
}

TEST(PoissonSchedule, IsReproducedExactly) {
  const std::vector<int64_t> a = fb::poisson_arrivals(1000, 42, 5000, 0);
  EXPECT_EQ(a, fb::poisson_arrivals(1000, 42, 5000, 0));
  EXPECT_NE(a, fb::poisson_arrivals(1000, 43, 5000, 0));
  // The first arrivals of seed 42 at 1000 qps, on every machine: SplitMix64's first three
  // uniforms (53 bits) as -ln(1 - U) / rate, summed, in ns (computed apart in Python).
  ASSERT_GE(a.size(), 4u);
  EXPECT_EQ(a[0], 0);
  EXPECT_EQ(a[1], 1353111);
  EXPECT_EQ(a[2], 1527357);
  EXPECT_EQ(a[3], 1853920);
  // Exponential gaps: mean 1 ms, coefficient of variation 1, within sampling error.
  std::vector<double> gaps;
  for (size_t k = 1; k < a.size(); ++k) gaps.push_back(double(a[k] - a[k - 1]) / 1e6);
  const double mean = std::accumulate(gaps.begin(), gaps.end(), 0.0) / double(gaps.size());
  double var = 0;
  for (double g : gaps) var += (g - mean) * (g - mean);
  const double cv = std::sqrt(var / double(gaps.size() - 1)) / mean;
  EXPECT_NEAR(mean, 1.0, 0.05);
  EXPECT_NEAR(cv, 1.0, 0.05);
  // Both minimums are met: the count, and the duration.
  EXPECT_EQ(fb::poisson_arrivals(1000, 42, 10, 0).size(), 10u);
  EXPECT_GE(fb::poisson_arrivals(1000, 42, 10, 2000000000).back(), 2000000000);
}

// The mean wait of first-come-first-served c servers on these arrivals (ns), query k served
// in service_ns(k): the recursion an ideal queue follows.
double ideal_mean_wait_ns(const std::vector<int64_t>& arrivals, int c, const std::function<int64_t(size_t)>& service_ns) {
  std::priority_queue<int64_t, std::vector<int64_t>, std::greater<>> free_at;
  for (int i = 0; i < c; ++i) free_at.push(0);
  double total = 0;
  for (size_t k = 0; k < arrivals.size(); ++k) {
    const int64_t start = std::max(arrivals[k], free_at.top());
    free_at.pop();
    free_at.push(start + service_ns(k));
    total += double(start - arrivals[k]);
  }
  return total / double(arrivals.size());
}

// The same with a deterministic service time: an ideal M/D/c queue.
double ideal_mean_wait_ns(const std::vector<int64_t>& arrivals, int c, int64_t service_ns) {
  return ideal_mean_wait_ns(arrivals, c, std::function<int64_t(size_t)>([service_ns](size_t) { return service_ns; }));
}

// M/D/1: Pollaczek-Khinchine, exact. M/D/c: Cosmetatos' correction of half the M/M/c wait
// (Erlang C), within a few percent of the exact value at moderate load.
double md1_wait(double rho, double service) { return rho * service / (2 * (1 - rho)); }
double mdc_wait(int c, double rho, double service) {
  const double a = rho * c;  // offered load
  double term = 1, sum = 1;
  for (int k = 1; k < c; ++k) sum += term *= a / k;
  const double last = term * a / c / (1 - rho);
  const double erlang_c = last / (sum + last);
  const double mmc = erlang_c * service / (c * (1 - rho));
  return 0.5 * mmc * (1 + (1 - rho) * (c - 1) * (std::sqrt(4.0 + 5 * c) - 2) / (16 * rho * c));
}

TEST(QueueingTheory, IdealQueueOnOurArrivalsMatchesMDc) {
  // The schedule is what a server run issues: on 2 million arrivals the ideal queue's mean
  // wait lies within 2% of the theory (sampling error), so the schedule is Poisson enough.
  const double service_ms = 1.0;
  for (int c : {1, 2}) {
    const double rho = 0.6, qps = rho * c / (service_ms / 1e3);
    const std::vector<int64_t> a = fb::poisson_arrivals(qps, 7, 2000000, 0);
    const double w = ideal_mean_wait_ns(a, c, 1000000) / 1e6;
    const double theory = c == 1 ? md1_wait(rho, service_ms) : mdc_wait(c, rho, service_ms);
    EXPECT_NEAR(w, theory, 0.02 * theory) << "c=" << c;
  }
}

// Busy-waits `us` on the calling thread: a synthetic executor of known service time.
void busy_us(int64_t us) {
  const int64_t until = fb::monotonic_ns() + us * 1000;
  while (fb::monotonic_ns() < until) {
  }
}

// What a server run of `queries` Poisson arrivals at utilisation rho on `c` instances of a
// synthetic executor that busy-waits `service_us` measured, beside ideal queues on the same
// arrivals (µs): `served` is served as the run served each query (its measured start to end,
// which a preempted busy-wait stretches), `nominal` in exactly `service_us`.
struct QueueWaits {
  double measured = 0, served = 0, nominal = 0, mean_service = 0;
};

QueueWaits measured_and_ideal_wait(int c, double rho, int64_t service_us, int64_t queries, uint64_t seed) {
  fb::LoadSettings s;
  s.scenario = "server";
  s.instances = c;
  s.target_qps = rho * c / (double(service_us) / 1e6);
  s.latency_bound_ms = 1000;
  s.min_queries = queries;
  s.min_duration_ms = 0;
  s.seed = seed;
  std::vector<fb::LoadInstance> pool(size_t(c), fb::LoadInstance{[service_us] { busy_us(service_us); }, nullptr});
  const std::vector<int64_t> schedule = fb::poisson_arrivals(s.target_qps, s.seed, s.min_queries, 0);
  const fb::LoadRun run = fb::run_load(s, pool, schedule);
  EXPECT_EQ(run.stopped, "");
  QueueWaits w;
  EXPECT_EQ(run.samples.size(), schedule.size());
  if (run.samples.size() != schedule.size()) return w;
  for (const fb::LoadSample& q : run.samples) {
    w.measured += double(q.start_ns - q.issue_ns);
    w.mean_service += double(q.end_ns - q.start_ns);
  }
  w.measured /= double(run.samples.size()) * 1e3;
  w.mean_service /= double(run.samples.size()) * 1e3;
  w.served = ideal_mean_wait_ns(schedule, c, std::function<int64_t(size_t)>([&](size_t k) {
               return run.samples[k].end_ns - run.samples[k].start_ns;
             })) / 1e3;
  w.nominal = ideal_mean_wait_ns(schedule, c, service_us * 1000) / 1e3;
  const fb::LoadFigures f = fb::load_figures(s, 1, run);
  EXPECT_EQ(f.served, queries);
  EXPECT_NEAR(f.qps, s.target_qps, 0.1 * s.target_qps);
  return w;
}

// The measured queueing delay against M/D/c, in two parts. First, the loop serves as an ideal
// first-come-first-served queue would on its own arrivals and its own measured service times
// (within 15% + 40 µs: the wake-up of an idle instance, tens of µs). Its measured service
// times, not the nominal 1 ms, since a busy-wait preempted by the hypervisor or another
// process runs longer, and 2 instances on 2 vCPUs leave no slack for that (CI saw a 566 µs
// wait against 344 µs nominal). Second, the ideal queue at exactly 1 ms on these 2000-2400
// arrivals lies within 25% of the theory (their sampling error; on 2 million arrivals it is
// within 2%, IdealQueueOnOurArrivalsMatchesMDc). The test runs alone (tests/CMakeLists.txt:
// RUN_SERIAL), since its instances need the cores.
// When other processes hold the cores (a wait of 200 ms was seen at load 3.9 on 2 cores) the
// comparison says nothing, and is skipped.
#define SKIP_WHEN_BUSY(instances)                                                                              \
  if (const std::string busy = fb::busy_machine_warning(instances, int(std::thread::hardware_concurrency()), 0.5); \
      !busy.empty())                                                                                           \
  GTEST_SKIP() << busy

void expect_matches_queueing_theory(int c, double rho, int64_t queries, uint64_t seed, double theory) {
  const QueueWaits w = measured_and_ideal_wait(c, rho, 1000, queries, seed);
  std::printf("M/D/%d rho %.1f, service 1 ms (measured mean %.1f us): measured wait %.1f us, ideal queue on the "
              "measured services %.1f us, at 1 ms %.1f us, theory %.1f us\n",
              c, rho, w.mean_service, w.measured, w.served, w.nominal, theory);
  EXPECT_NEAR(w.measured, w.served, 0.15 * w.served + 40);
  EXPECT_NEAR(w.nominal, theory, 0.25 * theory);
}

TEST(ServerRun, QueueingDelayMatchesMD1) {
  SKIP_WHEN_BUSY(1);
  expect_matches_queueing_theory(1, 0.5, 2000, 1, md1_wait(0.5, 1000));
}

TEST(ServerRun, TwoInstancesMatchMD2) {
  SKIP_WHEN_BUSY(2);
  expect_matches_queueing_theory(2, 0.6, 2400, 3, mdc_wait(2, 0.6, 1000));
}

TEST(LoadRun, StreamedScenariosIssueOnCompletion) {
  fb::LoadSettings s;
  s.scenario = "multi-stream";
  s.samples_per_query = 4;
  s.instances = 2;
  s.min_queries = 700;  // a p99 claim needs 662
  s.min_duration_ms = 0;
  std::vector<fb::LoadInstance> pool(2, fb::LoadInstance{[] { busy_us(50); }, nullptr});
  const fb::LoadRun run = fb::run_load(s, pool, {});
  EXPECT_EQ(run.queries, 700);
  ASSERT_EQ(run.samples.size(), 2800u);
  for (size_t k = 4; k < run.samples.size(); k += 4) {
    // A query is issued when the last sample of the one before ends.
    int64_t last_end = 0;
    for (size_t j = k - 4; j < k; ++j) last_end = std::max(last_end, run.samples[j].end_ns);
    EXPECT_EQ(run.samples[k].issue_ns, last_end);
  }
  const fb::LoadFigures f = fb::load_figures(s, 1, run);
  EXPECT_TRUE(f.valid) << f.invalid;
  EXPECT_EQ(f.claim_discarded, 0);  // 700 queries claim p99 with one over it (t = 1)
  EXPECT_GE(f.p50_ms, 0.1);         // two rounds of 50 µs samples per query at least
}

TEST(LoadRun, OverheadPerQueryIsMeasured) {
  // Not a speed assertion: the figure is printed (and stored with every load case); it must
  // be a real, positive time.
  const double ns = fb::measure_load_overhead_ns(20000);
  std::printf("load loop overhead: %.0f ns per query\n", ns);
  EXPECT_GT(ns, 0);
  EXPECT_TRUE(std::isfinite(ns));
}

}  // namespace

// Through the binary: a server load case of a scenario, its line, its stored samples, and
// the gate's load rules.

namespace {

std::string count_rows(const std::string& db, const std::string& sql) {
  return fb::test::with_db(db, SQLITE_OPEN_READONLY, [&](sqlite3* h) {
    sqlite3_stmt* st = nullptr;
    std::string out;
    if (sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
      out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return out;
  });
}

TEST(LoadCase, ServerRunIsStoredAndGated) {
  fb::ScratchDir dir("fusebench_load_case");
  const std::string db = dir.path("load.db");
  const std::string bin = FUSEBENCH_BINARY;
  const fb::Outcome run = fb::sh(bin + " run " + FUSEBENCH_SOURCE_DIR "/scenarios/load-server.json --db " + db +
                                 " --report " + dir.path("report.html"));
  ASSERT_TRUE(run.code == 0 || run.code == 1) << run.output;
  EXPECT_NE(run.output.find("server 400 qps (bound 5 ms), 2x1: p50 "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("loop overhead "), std::string::npos) << run.output;
  // Every sample's three times, one row each, as many as the step says it issued.
  EXPECT_EQ(count_rows(db, "SELECT COUNT(*) FROM load_samples"), count_rows(db, "SELECT samples FROM load_steps"));
  EXPECT_EQ(count_rows(db, "SELECT COUNT(*) FROM load_samples WHERE start_ns >= 0 AND (end_ns < start_ns OR start_ns < issue_ns)"), "0");
  // Both instances served; a run stopped early (a slow or busy machine: seen under
  // ThreadSanitizer) also stores the samples it never issued, with no instance (-1).
  EXPECT_EQ(count_rows(db, "SELECT COUNT(DISTINCT instance) FROM load_samples WHERE start_ns >= 0"), "2");
  // The gate follows the stored step, whatever this machine did: its validity (min_valid_rate
  // 1) and the scenario's max_claimed_ms of 5 (a valid run's claimed p99 can still exceed it:
  // the claim is a higher order statistic than the over-bound count judges).
  const std::string passes = count_rows(db, "SELECT valid AND claimed_ms IS NOT NULL AND claimed_ms <= 5 FROM load_steps");
  const fb::Outcome gate = fb::sh(bin + " gate --db " + db + " --min-valid-rate 1");
  EXPECT_EQ(gate.code, passes == "1" ? 0 : 1) << gate.output << "\nstored step: " << count_rows(db, "SELECT valid || ' ' || claimed_ms FROM load_steps");
  EXPECT_NE(gate.output.find("min valid rate 1.00; max claimed from the scenario"), std::string::npos) << gate.output;
  // An impossible claim fails.
  const fb::Outcome strict = fb::sh(bin + " gate --db " + db + " --max-claimed-ms 0.000001");
  EXPECT_EQ(strict.code, 1) << strict.output;
  std::ifstream report(dir.path("report.html"));
  const std::string html((std::istreambuf_iterator<char>(report)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("Latency against rate"), std::string::npos);
}

// On a GPU each instance is an execution context on a stream of its own: an offline load
// on 2 streams is served by both, every query answered (outputs back on the host).
TEST(LoadCase, StreamsServeOnTheGpu) {
  if (fb::cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device here (fb::cuda_device_count() is 0)";
  fb::ScratchDir dir("fusebench_load_gpu");
  std::ofstream(dir.path("s.json")) << R"({"model": "zoo:mlp", "matrix": {"device": ["cuda"]}, "load": "offline", "instances": 2,
      "load_settings": {"min_duration_ms": 200, "min_queries": 500}})";
  const fb::Outcome run = fb::sh(std::string(FUSEBENCH_BINARY) + " run " + dir.path("s.json") + " --db " + dir.path("g.db"));
  ASSERT_EQ(run.code, 0) << run.output;
  const std::string db = dir.path("g.db");
  EXPECT_EQ(count_rows(db, "SELECT COUNT(DISTINCT instance) FROM load_samples"), "2");
  EXPECT_EQ(count_rows(db, "SELECT COUNT(*) FROM load_samples WHERE start_ns < 0 OR end_ns < start_ns"), "0");
  EXPECT_EQ(count_rows(db, "SELECT COUNT(*) FROM load_samples"), count_rows(db, "SELECT samples FROM load_steps"));
}

// A scenario `run` must refuse before running anything: exit 2, the message naming the field.
void expect_refused(const std::string& scenario, const std::string& message) {
  fb::ScratchDir dir("fusebench_load_refused");
  std::ofstream(dir.path("s.json")) << scenario;
  const fb::Outcome run = fb::sh(std::string(FUSEBENCH_BINARY) + " run " + dir.path("s.json") + " --db " + dir.path("x.db"));
  EXPECT_EQ(run.code, 2) << run.output;
  EXPECT_NE(run.output.find(message), std::string::npos) << run.output;
}

TEST(LoadCase, RefusesAPoolThatDoesNotFitTheCores) {
  expect_refused(R"({"model": "zoo:mlp", "load": "offline", "instances": 64, "threads": 64})",
                 "field 'instances': a pool of 64 instances x 64 threads needs 4096 cores");
}

TEST(LoadCase, ServerNeedsABound) {
  expect_refused(R"({"model": "zoo:mlp", "load": "server", "load_settings": {"target_qps": 10}})",
                 "field 'load_settings.latency_bound_ms': a server load needs a latency bound");
}

}  // namespace

namespace {

TEST(LoadCase, SettingsRoundTripThroughTheStoredConfig) {
  fb::CaseSpec s;
  s.model = "zoo:mlp";
  const std::string single_key = s.key_json();
  s.load.scenario = "server";
  s.load.instances = 2;
  s.load.latency_bound_ms = 10;
  s.load.peak_search = true;  // no target rate: the search finds it, stored as 0
  EXPECT_EQ(fb::CaseSpec::from_json(s.to_json()), s);
  EXPECT_NE(s.key_json(), single_key);  // another load is another case
  fb::CaseSpec single;
  single.model = "zoo:mlp";
  EXPECT_FALSE(single.to_json().contains("load_settings"));  // single-stream cases keep their configs
  EXPECT_EQ(single.key_json(), single_key);
}

}  // namespace
