#include "harness/run/run_loop.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "engine/ir/error.h"
#include "engine/ops/plugin_rows.h"
#include "harness/cases/gpu_environment.h"
#include "harness/judge/gate.h"
#include "harness/measure/environment.h"
#include "harness/measure/openmp_waits.h"
#include "harness/measure/interference.h"
#include "harness/measure/load_case.h"
#include "harness/measure/plugin_cost_text.h"
#include "harness/run/runner.h"
#include "harness/util/format_number.h"

namespace fb {
namespace {

// The gate's rules that one case can be judged on alone (min_speedup, max_abs_err; not
// max_regression, which needs a baseline run): the outcome ("" when its scenario sets none)
// and, unless it passed, the rules' figures.
struct CaseGate {
  std::string outcome;
  std::string text;
};

CaseGate case_gate(const CaseResult& r) {
  const GateConfig& rules = r.spec.gate;
  if (r.status == CaseStatus::kError || !(rules.min_speedup || rules.max_abs_err || rules.min_valid_rate || rules.max_claimed_ms)) return {};
  GateConfig alone = r.spec.gate;
  alone.max_regression.reset();
  CaseResult judged = r;
  judged.spec.gate = alone;
  judged.status = CaseStatus::kPassed;  // accuracy has its own word on the line
  const GateReport g = evaluate_gate({StoredCase{0, 0, judged}}, {}, nullptr);
  CaseGate out{outcome_name(g.outcome), ""};
  for (const RuleResult& rule : g.cases.front().rules)
    if (rule.outcome != Outcome::kPass)
      out.text += std::string(out.text.empty() ? "" : "; ") + rule.rule +
                  (rule.rule == "disturbed" ? " (below)" : " " + rule.detail);
  return out;
}

// A load case's line: its figures, a peak search's steps under it.
std::string load_case_line(const CaseResult& r) {
  const LoadResult& load = *r.load;
  std::string line = r.spec.label() + "  " + load_line(reported_step(load).figures) + "  max err " +
                     format_number("%.2e", r.accuracy.max_abs_err) + "  " + (r.status == CaseStatus::kPassed ? "accuracy ok" : "accuracy FAIL");
  if (r.spec.load.peak_search) {
    line += "\n    peak search: " + (std::isnan(load.peak_qps) ? std::string("no rate tried was valid")
                                                             : "peak valid rate " + format_number("%g", load.peak_qps) + " qps");
    for (const LoadStep& step : load.steps) line += "\n      " + load_line(step.figures);
  }
  if (const CaseGate gate = case_gate(r); !gate.outcome.empty())
    line += "  gate " + gate.outcome + (gate.text.empty() ? "" : ": " + gate.text);
  const LoadFigures& f = reported_step(load).figures;
  line += "\n    loop overhead " + format_number("%.0f", f.overhead_ns) + " ns/query; wake-up of an idle instance p50 " +
          format_number("%.1f", f.dispatch_p50_us) + " us, p99 " + format_number("%.1f", f.dispatch_p99_us) + " us";
  return line;
}

std::string case_line(const CaseResult& r) {
  if (r.status == CaseStatus::kError) return r.spec.label() + "  ERROR: " + r.error;
  if (r.load) return load_case_line(r);
  const CaseGate gate = case_gate(r);
  return r.spec.label() + "  engine " + format_number("%.3f", r.engine.stats.median) + " ms  reference " +
         format_number("%.3f", r.reference.stats.median) + " ms  speedup " + format_number("%.2f", r.speedup) + "x [" +
         format_number("%.2f", r.speedup_ci_low) + ", " + format_number("%.2f", r.speedup_ci_high) + "]  max err " +
         format_number("%.2e", r.accuracy.max_abs_err) + "  " + (r.status == CaseStatus::kPassed ? "accuracy ok" : "accuracy FAIL") +
         (gate.outcome.empty() ? "" : "  gate " + gate.outcome + (gate.text.empty() ? "" : ": " + gate.text)) +
         (r.process_noise.processes > 1 ? "  " + std::to_string(r.process_noise.processes) + " processes, speedup spread " +
                                              format_number("%.1f%%", 100 * r.process_noise.speedup)
                                        : "") +
         (r.noisy ? "  (noisy: its interval missed the " + format_number("±%g%%", 100 * r.spec.timing.target_rel_ci) +
                        " target; stopped: " + r.stop_reason + ")"
                  : "") +
         (r.disturbed.empty() ? "" : "\n    DISTURBED: " + r.disturbed) +
         (r.gpu ? "\n    " + gpu_summary(*r.gpu) : "") +
         // Why it failed: "max err 0" alone hides a shape mismatch (a detector's extra box).
         (r.accuracy.passed || r.accuracy.detail.empty() ? "" : "\n    " + r.accuracy.detail);
}

std::set<std::string> scenario_names(const nlohmann::json& scenarios) {
  std::set<std::string> names;
  if (scenarios.is_array())
    for (const auto& s : scenarios)
      if (s.is_object() && s.contains("name") && s["name"].is_string()) names.insert(s["name"].get<std::string>());
  return names;
}

}  // namespace

std::string fusebench_version_of(const std::string& path, const std::string& option) {
  if (access(path.c_str(), X_OK) != 0) throw Error(option + " " + path + ": no executable file there");
  std::string out;
  if (FILE* p = popen(("'" + path + "' --version 2>&1").c_str(), "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    if (pclose(p) != 0) out.clear();
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (out.rfind("fusebench ", 0) != 0)
    throw Error(option + " " + path + ": not a fusebench executable (`--version` said '" + out.substr(0, 80) + "')");
  return out;
}

Shard parse_shard(const std::string& text) {
  Shard s;
  int used = 0;
  if (std::sscanf(text.c_str(), "%d/%d%n", &s.index, &s.count, &used) != 2 || used != int(text.size()) || s.count < 1 ||
      s.index < 1 || s.index > s.count)
    throw Error("--shard: expected K/N with 1 <= K <= N (for example 2/4), got '" + text + "'");
  return s;
}

std::string matrix_identity(const CaseSpec& s) {
  // Every setting of the case key (harness/cases/case_fields.h says which), without the model's
  // hash: a new matrix axis or setting is part of it the day it is added to the table.
  return s.scenario + "|" + s.model + "|" + s.key_json();
}

std::vector<CaseSpec> shard_cases(std::vector<CaseSpec> cases, const Shard& shard) {
  std::vector<std::pair<std::string, size_t>> order;
  for (size_t i = 0; i < cases.size(); ++i) order.emplace_back(matrix_identity(cases[i]), i);
  std::sort(order.begin(), order.end());
  std::vector<size_t> mine;
  for (size_t i = size_t(shard.index - 1); i < order.size(); i += size_t(shard.count)) mine.push_back(order[i].second);
  std::sort(mine.begin(), mine.end());  // in the scenarios' own order, as an unsharded run goes
  std::vector<CaseSpec> out;
  for (size_t i : mine) out.push_back(std::move(cases[i]));
  return out;
}

// Everything a run can refuse without a database: the scenarios, their cases, the plugin
// libraries and the flags that conflict. Done before the store is opened, so a refused run
// creates no database and writes nothing to an existing one.
RunSession::CheckedRun RunSession::check(const RunRequest& request) {
  CheckedRun checked;
  for (const std::string& path : request.scenario_files) {
    checked.scenarios.push_back(load_scenario(path));
    if (!checked.names.insert(checked.scenarios.back().name).second)
      throw Error(path + ": scenario name '" + checked.scenarios.back().name + "' is used by another scenario in this run");
  }
  std::vector<CaseSpec>& cases = checked.cases;
  for (const Scenario& s : checked.scenarios)
    for (CaseSpec c : expand_cases(s)) {
      for (const std::string& lib : request.plugin_libraries)
        if (std::find(c.plugins.libraries.begin(), c.plugins.libraries.end(), lib) == c.plugins.libraries.end())
          c.plugins.libraries.push_back(lib);
      cases.push_back(std::move(c));
    }
  // A pool that cannot have its own cores is refused before anything runs.
  for (const CaseSpec& c : cases) check_pool_fits(c, c.scenario_file.empty() ? c.scenario : c.scenario_file);
  if (request.max_threads > 0)
    for (const CaseSpec& c : cases)
      if (c.threads > request.max_threads)
        throw Error("case '" + c.label() + "' uses " + std::to_string(c.threads) + " threads, more than --cores-per-worker " +
                    std::to_string(request.max_threads));
  // Every plugin library is loaded and its API version checked before anything runs.
  for (const CaseSpec& c : cases) registry_with_plugins(c.plugins.libraries);
  if (!request.against.empty() && (request.resume || request.shard))
    throw Error("--against: a paired A/B run cannot be resumed or sharded");
  if (!request.against.empty())
    for (const CaseSpec& c : cases)
      if (!c.load.is_default())
        throw Error(c.scenario_file + ": field 'load': --against times cases in worker processes; a load case ('" +
                    c.label() + "') runs in one (compare two runs of it instead)");
  if (request.inject_delay_us)
    for (CaseSpec& c : cases) c.timing.inject_delay_us = *request.inject_delay_us;
  if (request.inject_slowdown)
    for (CaseSpec& c : cases) c.timing.inject_slowdown = *request.inject_slowdown;
  checked.all_cases = cases.size();
  if (request.shard) cases = shard_cases(std::move(cases), *request.shard);
  return checked;
}

RunSession::RunSession(const RunRequest& request, std::ostream& out) : RunSession(request, out, check(request)) {}

RunSession::RunSession(const RunRequest& request, std::ostream& out, CheckedRun checked)
    : out_(out), db_path_(request.db_path), store_(request.db_path), tty_(isatty(STDERR_FILENO)) {
  const std::vector<Scenario>& scenarios = checked.scenarios;
  const std::set<std::string>& names = checked.names;
  std::vector<CaseSpec>& cases = checked.cases;
  const size_t all_cases = checked.all_cases;
  const std::string shard_text = request.shard ? request.shard->text() : "";

  RunInfo info = capture_environment();
  info.command = request.command;
  info.shard = shard_text;
  for (const Scenario& s : scenarios) info.scenarios.push_back({{"name", s.name}, {"file", s.file}});

  // --resume: the latest run that never finished and ran exactly these scenarios and shard.
  std::optional<int64_t> resumed;
  if (request.resume) {
    const std::vector<StoredRun> runs = store_.list_runs();
    for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
      if (it->finished_at.empty() && scenario_names(it->info.scenarios) == names && it->info.shard == shard_text) {
        resumed = it->id;
        break;
      }
    }
    if (!resumed) out_ << "resume: no interrupted run of these scenarios in " << db_path_ << "; starting a new run\n";
  }
  // Cases a resumed run stored are skipped, except those whose worker died or hung: they
  // run again, and their result replaces the record of the lost attempt.
  std::map<std::string, std::optional<int64_t>> stored;
  if (resumed)
    for (const StoredCase& sc : store_.load_cases(*resumed, CaseDetail::kSummary))
      stored[matrix_identity(sc.result.spec)] = sc.result.worker_lost ? std::optional<int64_t>(sc.id) : std::nullopt;
  for (CaseSpec& c : cases) {
    auto it = stored.find(matrix_identity(c));
    if (it == stored.end()) pending_.push_back({std::move(c), std::nullopt});
    else if (it->second) pending_.push_back({std::move(c), it->second});
    else ++stored_before_;
  }

  // A machine already too busy for the cases' threads is said once, before anything runs.
  int threads = 0;
  for (const PendingCase& p : pending_) threads = std::max(threads, p.spec.threads);
  if (threads > 0)
    if (const std::string warning = busy_machine_warning(threads, info.cores, 0.5); !warning.empty()) {
      out_ << warning << "\n";
      if (const std::string waits = stop_openmp_spin_for_busy_machine(); !waits.empty()) out_ << waits << "\n";
      info.library_versions["openmp waits"] = openmp_waits();
    }

  if (!request.against.empty()) {
    against_ = std::filesystem::absolute(request.against).lexically_normal().string();
    RunInfo other = info;
    other.timed_by = against_ + " (" + fusebench_version_of(against_, "--against") + ")";
    baseline_run_id_ = store_.begin_run(other);
    info.paired_with = baseline_run_id_;
  }
  run_id_ = resumed ? *resumed : store_.begin_run(info);
  const std::string of_shard =
      request.shard ? " (shard " + shard_text + " of " + std::to_string(all_cases) + " cases)" : "";
  if (baseline_run_id_)
    out_ << "paired A/B run: this fusebench (run " << run_id_ << ") against " << against_ << " (run " << baseline_run_id_
         << "), their worker processes alternating ABBA\n";
  if (resumed)
    out_ << "run " << run_id_ << " resumed: " << stored_before_ << " cases already stored, " << pending_.size()
         << " to run" << of_shard << ", " << info.cpu_model << ", " << info.cores << " cores\n";
  else
    out_ << "run " << run_id_ << ": " << pending_.size() << " cases from " << scenarios.size() << " scenario(s)" << of_shard
         << ", " << info.cpu_model << ", " << info.cores << " cores\n";
}

void RunSession::order_longest_first() {
  // The latest duration stored for each matrix place, over the earlier runs (newest last).
  std::map<std::string, double> seconds;
  for (const StoredRun& run : store_.list_runs()) {
    if (run.id == run_id_) continue;
    for (const StoredCase& sc : store_.load_cases(run.id, CaseDetail::kSummary)) {
      const CaseResult& r = sc.result;
      if (r.status == CaseStatus::kError || std::isnan(r.build_ms) || std::isnan(r.interference.timed_wall_ms)) continue;
      seconds[matrix_identity(r.spec)] = (r.build_ms + r.interference.timed_wall_ms) / 1000;
    }
  }
  auto cost = [&](const PendingCase& p) {
    auto it = seconds.find(matrix_identity(p.spec));
    return it == seconds.end() ? std::numeric_limits<double>::infinity() : it->second;
  };
  std::stable_sort(pending_.begin(), pending_.end(),
                   [&](const PendingCase& a, const PendingCase& b) { return cost(a) > cost(b); });
}

void RunSession::print_progress(size_t pending_index, const std::string& message) const {
  if (!tty_) return;
  std::cerr << "\r\033[K[" << stored_ + 1 << "/" << pending_.size() << "] " << pending_[pending_index].spec.label() << "  "
            << message << std::flush;
}

void RunSession::store_result(size_t pending_index, const CaseResult& r) {
  if (tty_) std::cerr << "\r\033[K" << std::flush;
  store_.write_case(run_id_, r, pending_[pending_index].replacing);
  ++stored_;
  failed_ += r.status == CaseStatus::kFailed;
  errors_ += r.status == CaseStatus::kError;
  lost_ += r.worker_lost;
  noisy_ += r.status != CaseStatus::kError && r.noisy;
  disturbed_ += r.status != CaseStatus::kError && !r.disturbed.empty();
  if (const CaseGate gate = case_gate(r); !gate.outcome.empty()) ++gate_counts_[gate.outcome];
  out_ << "[" << stored_ << "/" << pending_.size() << "] " << case_line(r) << std::endl;
  if (r.plugin_cost) out_ << format_plugin_cost(*r.plugin_cost, "      ") << std::flush;
  print_build_warnings(r);
}

// A build warning (a fusion limit that matches nothing: a misspelled op type) is shown
// on the terminal, not only in the stored build log; once per run, as a scenario's cases
// share its model and limits and would repeat it case after case.
void RunSession::print_build_warnings(const CaseResult& r) {
  size_t at = 0;
  while (at < r.build_log.size()) {
    const size_t end = std::min(r.build_log.find('\n', at), r.build_log.size());
    const std::string line = r.build_log.substr(at, end - at);
    at = end + 1;
    if (line.rfind("warning: ", 0) == 0 && warned_.insert(line).second)
      out_ << "      " << line << " (" << r.spec.label() << "; once per run)" << std::endl;
  }
}

void RunSession::store_pair(size_t pending_index, const CaseResult& candidate, const CaseResult& baseline) {
  store_.write_case(baseline_run_id_, baseline, std::nullopt);
  store_result(pending_index, candidate);
  if (baseline.status == CaseStatus::kError)
    out_ << "    against: ERROR: " << baseline.error << std::endl;
  else
    out_ << "    against: engine " << format_number("%.3f", baseline.engine.stats.median) << " ms  reference "
         << format_number("%.3f", baseline.reference.stats.median) << " ms  speedup "
         << format_number("%.2f", baseline.speedup) << "x" << std::endl;
}

void RunSession::finish() {
  if (lost_ > 0) {
    out_ << lost_ << " case(s) lost with their worker: run " << run_id_
         << " stays unfinished; `fusebench run --resume` runs them again\n";
    return;
  }
  if (baseline_run_id_) store_.finish_run(baseline_run_id_);
  store_.finish_run(run_id_);
}

int RunSession::summarize(const std::string& report_path) const {
  out_ << "\naccuracy: " << stored_ - failed_ - errors_ << " passed, " << failed_ << " failed, " << errors_ << " errors"
       << (stored_before_ ? " (and " + std::to_string(stored_before_) + " stored before the interruption)" : "") << "\n";
  if (!gate_counts_.empty()) {
    auto count = [&](const char* outcome) {
      auto it = gate_counts_.find(outcome);
      return std::to_string(it == gate_counts_.end() ? 0 : it->second);
    };
    out_ << "gate (min_speedup, max_abs_err; `fusebench gate` also judges max_regression): " << count("pass") << " pass, "
         << count("FAIL") << " FAIL, " << count("INCONCLUSIVE") << " INCONCLUSIVE\n";
  }
  if (noisy_ || disturbed_)
    out_ << "timing: " << noisy_ << " noisy (interval wider than its target), " << disturbed_
         << " disturbed by the machine (flagged on their lines)\n";
  out_
       << "results: " << std::filesystem::absolute(db_path_).string() << " (run " << run_id_ << ")\n"
       << "report:  " << std::filesystem::absolute(report_path).string() << "\n";
  if (errors_) return 2;
  return failed_ ? 1 : 0;
}

void run_in_process(RunSession& session) {
  CaseRunner runner;
  for (size_t i = 0; i < session.pending().size(); ++i) {
    session.print_progress(i, "building");
    if (!session.against().empty()) {
      const auto [candidate, baseline] = runner.run_paired(
          session.pending()[i].spec, session.against(), [&](const std::string& msg) { session.print_progress(i, msg); });
      session.store_pair(i, candidate, baseline);
      continue;
    }
    const CaseResult r =
        runner.run(session.pending()[i].spec, [&](const std::string& msg) { session.print_progress(i, msg); });
    session.store_result(i, r);
  }
}

}  // namespace fb
