#include "harness/load/load_figures.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "harness/load/load_early_stopping.h"
#include "harness/stats/statistics.h"
#include "harness/util/format_number.h"

namespace fb {

LoadFigures load_figures(const LoadSettings& s, int threads, const LoadRun& run) {
  LoadFigures f;
  f.scenario = s.scenario;
  f.target_qps = s.scenario == "server" ? s.target_qps : 0;
  f.latency_bound_ms = s.scenario == "server" ? s.latency_bound_ms : 0;
  f.percentile = percentile_of(s);
  f.instances = s.instances;
  f.threads = threads;
  f.queries = run.queries;
  f.samples = int64_t(run.samples.size());
  std::vector<double> dispatch_us;
  int64_t last_end = 0, last_issue = 0;
  for (const LoadSample& q : run.samples) {
    last_issue = std::max(last_issue, q.issue_ns);
    if (q.end_ns < 0) continue;
    ++f.served;
    last_end = std::max(last_end, q.end_ns);
    if (!q.queued) dispatch_us.push_back(double(q.start_ns - q.issue_ns) / 1e3);
  }
  std::vector<double> latency_ms = query_latencies_ms(run.samples);
  std::sort(latency_ms.begin(), latency_ms.end());
  if (!latency_ms.empty()) {
    f.p50_ms = percentile(latency_ms, 0.5);
    f.p90_ms = percentile(latency_ms, 0.9);
    f.p99_ms = percentile(latency_ms, 0.99);
    f.percentile_ms = percentile(latency_ms, f.percentile);
    f.mean_ms = std::accumulate(latency_ms.begin(), latency_ms.end(), 0.0) / double(latency_ms.size());
    f.max_ms = latency_ms.back();
  }
  if (!dispatch_us.empty()) {
    f.dispatch_p50_us = percentile(dispatch_us, 0.5);
    f.dispatch_p99_us = percentile(dispatch_us, 0.99);
  }
  f.duration_ms = double(s.scenario == "offline" ? last_end : last_issue) / 1e6;
  if (last_end > 0) {
    f.qps = double(latency_ms.size()) / (double(last_end) / 1e9);
    f.samples_per_s = double(f.served) / (double(last_end) / 1e9);
  }
  const PercentileClaim claim = claim_percentile(latency_ms, f.percentile);
  f.claimed_ms = claim.latency;
  f.claim_discarded = claim.discarded;
  f.claim_needed = claim.needed;

  std::vector<std::string> why;
  if (!run.stopped.empty()) why.push_back(run.stopped);
  else if (f.served < f.samples) why.push_back(std::to_string(f.samples - f.served) + " samples never served");
  if (f.queries < s.min_queries)
    why.push_back(std::to_string(f.queries) + " queries, fewer than min_queries " + std::to_string(s.min_queries));
  if (f.duration_ms < s.min_duration_ms)
    why.push_back("lasted " + format_number("%.0f", f.duration_ms) + " ms, less than min_duration_ms " +
                  format_number("%g", s.min_duration_ms));
  if (s.scenario == "server") {
    const OverBoundVerdict v = over_bound_verdict(latency_ms, s.latency_bound_ms, f.percentile);
    f.over_bound = v.over;
    f.needed_queries = v.needed;
    if (!v.passed)
      why.push_back("early stopping: " + std::to_string(v.over) + " queries over the bound need " + std::to_string(v.needed) +
                    " queries, " + std::to_string(v.more) + " more, every one under it");
    if (f.percentile_ms > s.latency_bound_ms)
      why.push_back("p" + format_number("%g", 100 * f.percentile) + " " + format_number("%.3f", f.percentile_ms) +
                    " ms over the bound " + format_number("%g", s.latency_bound_ms) + " ms");
  } else if (s.scenario != "offline" && !claim.enough) {
    why.push_back("early stopping: " + std::to_string(latency_ms.size()) + " queries, a p" +
                  format_number("%g", 100 * f.percentile) + " claim needs " + std::to_string(claim.needed));
  }
  for (const std::string& w : why) f.invalid += (f.invalid.empty() ? "" : "; ") + w;
  f.valid = why.empty();
  return f;
}

std::vector<double> query_latencies_ms(const std::vector<LoadSample>& samples) {
  std::map<int64_t, std::pair<int64_t, int64_t>> span;  // query: issue, last end (-1: a sample unserved)
  for (const LoadSample& q : samples) {
    auto [it, fresh] = span.try_emplace(q.query, q.issue_ns, q.end_ns);
    if (q.end_ns < 0 || it->second.second < 0) it->second.second = -1;
    else it->second.second = std::max(it->second.second, q.end_ns);
  }
  std::vector<double> out;
  for (const auto& [query, s] : span)
    if (s.second >= 0) out.push_back(double(s.second - s.first) / 1e6);
  return out;
}

const LoadStep& reported_step(const LoadResult& r) {
  for (const LoadStep& s : r.steps)
    if (s.figures.valid && s.figures.target_qps == r.peak_qps) return s;
  return r.steps.back();
}

std::string load_line(const LoadFigures& f) {
  const std::string pct = "p" + format_number("%g", 100 * f.percentile);
  std::string line = f.scenario;
  if (f.scenario == "server")
    line += " " + format_number("%g", f.target_qps) + " qps (bound " + format_number("%g", f.latency_bound_ms) + " ms)";
  line += ", " + std::to_string(f.instances) + "x" + std::to_string(f.threads) + ": p50 " + format_number("%.3f", f.p50_ms) +
          " p90 " + format_number("%.3f", f.p90_ms) + " p99 " + format_number("%.3f", f.p99_ms) + " ms";
  if (f.scenario != "offline")
    line += std::isnan(f.claimed_ms) ? ", no " + pct + " claim (needs " + std::to_string(f.claim_needed) + " queries)"
                                     : ", claimed " + pct + " " + format_number("%.3f", f.claimed_ms) + " ms";
  if (f.scenario == "server") line += ", " + std::to_string(f.over_bound) + " over the bound";
  line += ", " + std::to_string(f.queries) + " queries, " + format_number("%.1f", f.qps) + " qps";
  if (f.scenario == "offline" || f.scenario == "multi-stream")
    line += " (" + format_number("%.1f", f.samples_per_s) + " samples/s)";
  line += f.valid ? ", VALID" : ", INVALID: " + f.invalid;
  return line;
}

}  // namespace fb
