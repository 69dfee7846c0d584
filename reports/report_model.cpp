#include "reports/report_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "engine/ir/error.h"
#include "harness/cases/gpu_environment.h"
#include "harness/stats/statistics.h"

namespace fb {
namespace {

using json = nlohmann::json;

bool usable(double v) { return std::isfinite(v) && v > 0; }

// The run picked, or the latest; fb::Error naming the file when absent.
int64_t pick(const ResultStore& store, std::optional<int64_t> run) {
  if (run) {
    store.load_run(*run);  // throws "run N is not in FILE"
    return *run;
  }
  const std::optional<int64_t> latest = store.latest_run();
  if (!latest) throw Error(store.path() + ": holds no runs to report on");
  return *latest;
}

HistoryPoint point_of(const CaseFigures& f, size_t run) {
  HistoryPoint p;
  p.run = run;
  const auto set = [&](Metric m, const CaseFigures::Interval& v) {
    p.value[size_t(m)] = v.median;
    p.low[size_t(m)] = v.low;
    p.high[size_t(m)] = v.high;
  };
  set(Metric::kEngine, f.engine);
  set(Metric::kReference, f.reference);
  set(Metric::kSpeedup, f.speedup);
  p.noisy = f.noisy;
  return p;
}

// Change points of each metric's series, exactly as `fusebench history` finds them: a
// metric's series leaves out the runs where that metric is not a positive number.
void find_changes(CaseTrend& h, const ChangePointOptions& o) {
  for (size_t m = 0; m < kMetrics; ++m) {
    std::vector<double> values;
    std::vector<size_t> at;  // point index of each value
    for (size_t i = 0; i < h.points.size(); ++i)
      if (usable(h.points[i].value[m])) values.push_back(h.points[i].value[m]), at.push_back(i);
    if (values.size() < 2 * static_cast<size_t>(o.min_segment)) continue;
    for (ChangePoint cp : e_divisive(values, o)) {
      cp.index = at[cp.index];
      h.changes[m].push_back(cp);
    }
  }
}

// The profile a case's engine view reads: the newest profile of the same model content,
// precision, device, CUDA graph, batch, fusion level, threads and fusion limits stored before `until` (the start of the
// next run, so a profile taken right after a nightly run belongs to that run); "" = no limit.
// A profile's config is the BuildConfig JSON (engine/plan/build_config_json.h); profiles
// stored before it was name the op types "exclude_ops".
std::optional<int64_t> matching_profile(const std::vector<StoredProfile>& profiles, const CaseSpec& s,
                                        const std::string& until) {
  std::optional<int64_t> best;
  for (const StoredProfile& p : profiles) {  // oldest first: the last match is the newest
    if (p.model_hash != s.model_hash || (!until.empty() && p.created_at >= until)) continue;
    const json c = json::parse(p.config_json, nullptr, false);
    if (!c.is_object()) continue;
    const auto list = [&](const char* k) {
      return c.contains(k) && c[k].is_array() ? c[k].get<std::vector<std::string>>() : std::vector<std::string>{};
    };
    // Precision, device and CUDA graph as build_config_to_json writes them (the last two
    // left out for the CPU and for off), and "fp32" for profiles stored before precision was.
    if (c.value("precision", "fp32") != precision_name(s.precision) || c.value("device", "cpu") != s.device ||
        c.value("cuda_graph", false) != s.cuda_graph || c.value("fusion", "") != fusion_level_name(s.fusion) ||
        c.value("batch", int64_t(0)) != s.batch ||
        c.value("threads", 0) != s.threads || list("exclude_nodes") != s.fusion_limits.exclude_nodes ||
        list(c.contains("exclude_op_types") ? "exclude_op_types" : "exclude_ops") != s.fusion_limits.exclude_ops ||
        list("partition_points") != s.fusion_limits.partition_points)
      continue;
    best = p.id;
  }
  return best;
}

// A regression or improvement explained as `fusebench explain` explains it, against the
// baseline's result of its key (the last stored, as compare takes it).
void explain_in_report(ReportCase& rc, const RunInfo& run, const std::vector<StoredCase>& base_cases,
                       const RunInfo& base_run) {
  const StoredCase* base = nullptr;
  for (const StoredCase& sc : base_cases)
    if (sc.result.spec.case_key() == rc.key) base = &sc;
  if (!base) return;
  const bool here = rc.stored.result.profile.has_value(), there = base->result.profile.has_value();
  if (!here || !there) {
    rc.explanation_note = std::string("no layer profile stored ") + (!here && !there ? "on either side" : !here ? "in this run" : "in the baseline") +
                          " (a scenario's \"profile\": {\"iterations\": N} stores one with each case)";
    return;
  }
  rc.explanation = explain_cases({base, &base_run}, {&rc.stored, &run}, rc.judgement);
}

// The start of the run after `run` in `runs` (oldest first); "" when it is the last.
std::string next_start(const std::vector<StoredRun>& runs, int64_t run) {
  for (size_t i = 0; i + 1 < runs.size(); ++i)
    if (runs[i].id == run) return runs[i + 1].info.started_at;
  return "";
}

EngineView engine_view(const CaseResult& r, std::optional<StoredProfile> profile,
                       std::optional<StoredProfile> baseline_profile) {
  EngineView v;
  v.passes = pass_summaries(r.build_log);
  std::map<int, const LayerProfile*> timed, base_timed;
  if (profile)
    for (const LayerProfile& l : profile->profile.layers) timed[l.index] = &l;
  if (baseline_profile)
    for (const LayerProfile& l : baseline_profile->profile.layers) base_timed[l.index] = &l;
  // The case's own layer map when stored; else the profile's layers (same engine build).
  std::vector<LayerRecord> layers = r.layers;
  if (layers.empty() && profile)
    for (const LayerProfile& l : profile->profile.layers)
      layers.push_back({l.index, l.name, l.kind, l.sources, l.kernel, "", {}, {}, l.flops, l.bytes, ""});
  for (const LayerRecord& l : layers) {
    LayerRow row;
    row.index = l.index;
    row.name = l.name;
    row.kind = l.kind;
    row.sources = l.sources;
    row.kernel = l.kernel;
    // Databases before schema 4 did not store a layer's precision: the case's, which the
    // engine ran every layer in then.
    row.precision = l.precision.empty() ? precision_name(r.spec.precision) : l.precision;
    row.flops = std::isfinite(l.flops) ? l.flops : 0;
    row.bytes = std::isfinite(l.bytes) ? l.bytes : 0;
    auto t = timed.find(l.index);
    if (t != timed.end() && t->second->name == l.name) {
      const LayerProfile& lp = *t->second;
      row.profiled = true;
      if (row.kernel.empty()) row.kernel = lp.kernel;
      if (row.flops == 0) row.flops = lp.flops;
      if (row.bytes == 0) row.bytes = lp.bytes;
      row.ms = lp.median_ms;
      row.share = profile->profile.total_ms > 0 ? lp.median_ms / profile->profile.total_ms : 0;
      row.gflops = row.ms > 0 ? row.flops / row.ms / 1e6 : 0;
      row.peak_share = profile->peaks.gflops > 0 ? row.gflops / profile->peaks.gflops : 0;
      auto b = base_timed.find(l.index);
      if (b != base_timed.end() && b->second->name == l.name) row.baseline_ms = b->second->median_ms;
    }
    v.layers.push_back(std::move(row));
  }
  if (profile) v.modules = profile->profile.modules;
  if (profile && baseline_profile && profile->id != baseline_profile->id) {
    // A change under 1% is within a profile's own run-to-run jitter: not listed.
    for (size_t i = 0; i < v.layers.size(); ++i)
      if (v.layers[i].baseline_ms && std::fabs(v.layers[i].ms - *v.layers[i].baseline_ms) >= 0.01 * *v.layers[i].baseline_ms)
        v.most_changed.push_back(i);
    const auto delta = [&](size_t i) { return std::fabs(v.layers[i].ms - *v.layers[i].baseline_ms); };
    std::stable_sort(v.most_changed.begin(), v.most_changed.end(), [&](size_t a, size_t b) { return delta(a) > delta(b); });
  }
  v.profile = std::move(profile);
  v.baseline_profile = std::move(baseline_profile);
  return v;
}

std::vector<BatchCurve> batch_curves(const std::vector<ReportCase>& cases) {
  std::vector<BatchCurve> curves;
  std::map<std::string, size_t> by_key;
  std::map<std::string, int> named;  // curves of one chart (model, threads) by name
  for (size_t i = 0; i < cases.size(); ++i) {
    const CaseSpec& s = cases[i].stored.result.spec;
    auto [it, fresh] = by_key.emplace(s.curve_key(), curves.size());
    if (fresh) {
      const std::string name = std::string(precision_name(s.precision)) + " " + fusion_level_name(s.fusion) + s.variant_label();
      const int same = ++named[s.model + "|" + std::to_string(s.threads) + "|" + name];
      curves.push_back({s.model, s.threads, same == 1 ? name : name + " (" + std::to_string(same) + ")", {}});
    }
    curves[it->second].cases.push_back(i);
  }
  for (BatchCurve& c : curves)
    std::stable_sort(c.cases.begin(), c.cases.end(), [&](size_t a, size_t b) {
      return cases[a].stored.result.spec.batch < cases[b].stored.result.spec.batch;
    });
  return curves;
}

// Runs fn(begin, end) over [0, n) split into one contiguous slice per core; rethrows the
// first error.
template <typename Fn>
void parallel_for(size_t n, Fn fn) {
  const size_t workers = std::max<size_t>(1, std::min<size_t>({8, std::thread::hardware_concurrency(), n}));
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> failed(workers);
  for (size_t w = 0; w < workers; ++w)
    pool.emplace_back([&, w] {
      try {
        fn(n * w / workers, n * (w + 1) / workers);
      } catch (...) {
        failed[w] = std::current_exception();
      }
    });
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
}

}  // namespace

const char* metric_name(Metric m) {
  switch (m) {
    case Metric::kEngine: return "engine";
    case Metric::kReference: return "reference";
    case Metric::kSpeedup: return "speedup";
  }
  return "?";
}

ReportModel cases_model(RunCases run) {
  ReportModel model;
  model.run = std::move(run.run);
  for (KeyedCase& c : run.cases) {
    ReportCase rc;
    static_cast<KeyedCase&>(rc) = std::move(c);
    model.cases.push_back(std::move(rc));
  }
  return model;
}

ReportModel gate_model(const GateReport& gate) {
  ReportModel model;
  model.run.id = gate.run_id;
  model.gate = gate;
  for (const CaseVerdict& v : gate.cases) {
    ReportCase rc;
    rc.stored.result = v.result;
    rc.key = v.case_key;
    model.cases.push_back(std::move(rc));
  }
  return model;
}

std::vector<PassSummary> pass_summaries(const std::string& build_log) {
  std::vector<PassSummary> out;
  std::istringstream in(build_log);
  for (std::string line; std::getline(in, line);) {
    // "after gelu_fusion: 41 layers (3 rewrites)"
    if (line.rfind("after ", 0) != 0) continue;
    const size_t colon = line.find(": ");
    if (colon == std::string::npos) continue;
    PassSummary p;
    p.pass = line.substr(6, colon - 6);
    if (p.pass == "fusion") continue;  // the closing summary line, not a pass
    if (std::sscanf(line.c_str() + colon + 2, "%d layers (%d rewrites)", &p.layers_after, &p.rewrites) != 2) continue;
    out.push_back(std::move(p));
  }
  return out;
}

ReportModel build_report_model(const ResultStore& store, const ReportOptions& options,
                               const ResultStore* baseline_store) {
  if (options.last < 1) throw Error("--last must be at least 1");
  const int64_t run_id = pick(store, options.run);
  ReportModel model = cases_model(load_run_cases(store, run_id));
  model.db_path = store.path();
  model.options = options;
  std::vector<StoredCase> cases;  // as gate and compare take them
  for (const ReportCase& c : model.cases) cases.push_back(c.stored);

  // The baseline: named, else the run before (or the latest of the other database).
  const std::vector<StoredRun> runs = store.list_runs();
  const ResultStore& base_store = baseline_store ? *baseline_store : store;
  std::optional<int64_t> base_id;
  if (options.baseline) base_id = pick(base_store, options.baseline);
  else if (baseline_store) base_id = pick(*baseline_store, std::nullopt);
  else
    for (size_t i = 1; i < runs.size(); ++i)
      if (runs[i].id == run_id) base_id = runs[i - 1].id;
  std::vector<StoredCase> base_cases;
  JudgementContext context;
  if (base_id) {
    model.baseline = base_store.load_run(*base_id);
    model.baseline_name = (baseline_store ? baseline_store->path() + " " : std::string()) + "run " + std::to_string(*base_id);
    base_cases = base_store.load_cases(*base_id);
    context = judgement_context(store, run_id, base_store, *base_id);
    model.machine = context.machine;
    model.baseline_machine = context.baseline_machine;
    model.same_machine = context.same_machine;
  }

  // Verdicts, from the harness as `fusebench gate` and `fusebench compare` reach them: the
  // baseline's history on its machine, speedup only across machines.
  CompareOptions compare = options.compare;
  compare.paired = context.paired;
  model.gate = evaluate_gate(cases, options.gate, base_id ? &base_cases : nullptr, compare, &context.history,
                             context.same_machine);
  std::map<std::string, CaseComparison> compared;
  if (base_id)
    for (CaseComparison& c : compare_runs(base_cases, cases, compare, &context.history, context.same_machine))
      compared[c.case_key] = std::move(c);

  // History: the last N runs up to this one, summary figures only.
  size_t end = 0;
  while (end < runs.size() && runs[end].id != run_id) ++end;
  const size_t begin = end + 1 > size_t(options.last) ? end + 1 - size_t(options.last) : 0;
  model.history_runs.assign(runs.begin() + std::ptrdiff_t(begin), runs.begin() + std::ptrdiff_t(end + 1));

  std::map<std::string, size_t> index_of_key;
  // A key stored twice: history follows its last result, as `history` does.
  for (size_t i = 0; i < model.cases.size(); ++i) index_of_key[model.cases[i].key] = i;
  // Each run's points, read in parallel (a connection per worker: SQLite reads in WAL mode
  // do not block each other); a run contributes its last result per key, as in `history`.
  std::vector<std::map<size_t, HistoryPoint>> in_run(model.history_runs.size());
  for (size_t i = 0; i < model.cases.size(); ++i) {
    const CaseResult& r = model.cases[i].stored.result;
    if (r.status != CaseStatus::kError) in_run.back()[index_of_key[model.cases[i].key]] = point_of(figures_of(r), in_run.size() - 1);
  }
  parallel_for(in_run.size() - 1, [&](size_t begin, size_t end) {
    const ResultStore reader(store.path());
    for (size_t h = begin; h < end; ++h)
      for (const CaseFigures& f : reader.load_case_figures(model.history_runs[h].id)) {
        if (f.status == CaseStatus::kError) continue;
        auto it = index_of_key.find(f.case_key);
        if (it != index_of_key.end()) in_run[h][it->second] = point_of(f, h);
      }
  });
  for (const auto& run : in_run)
    for (const auto& [i, p] : run) model.cases[i].history.points.push_back(p);
  // Change points: each series is independent and seeded, so the order does not matter.
  parallel_for(model.cases.size(), [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) find_changes(model.cases[i].history, options.change_points);
  });

  // Per case: the comparison and the engine view.
  const std::vector<StoredProfile> profiles = store.list_profiles();
  const std::vector<StoredProfile> base_profiles = baseline_store ? baseline_store->list_profiles() : profiles;
  const std::vector<StoredRun> base_runs = baseline_store ? baseline_store->list_runs() : runs;
  std::map<int64_t, StoredProfile> loaded, base_loaded;
  const auto fetch = [](const ResultStore& s, std::map<int64_t, StoredProfile>& cache, std::optional<int64_t> id) {
    std::optional<StoredProfile> out;
    if (!id) return out;
    auto it = cache.find(*id);
    if (it == cache.end()) it = cache.emplace(*id, s.load_profile(*id)).first;
    out = it->second;
    return out;
  };
  const std::string until = next_start(runs, run_id);
  const std::string base_until = base_id ? next_start(base_runs, *base_id) : "";
  for (size_t i = 0; i < model.cases.size(); ++i) {
    ReportCase& rc = model.cases[i];
    const CaseResult& r = rc.stored.result;
    auto it = compared.find(rc.key);
    if (it != compared.end()) {
      rc.baseline = it->second.baseline;
      rc.judgement = it->second.judgement;
      rc.compare_note = it->second.note;
    } else {
      rc.compare_note = base_id ? "not compared" : "no baseline run";
    }
    const std::optional<int64_t> pid = matching_profile(profiles, r.spec, until);
    const std::optional<int64_t> bid = base_id ? matching_profile(base_profiles, r.spec, base_until) : std::nullopt;
    rc.engine = engine_view(r, fetch(store, loaded, pid), fetch(base_store, baseline_store ? base_loaded : loaded, bid));

    if (r.status == CaseStatus::kError) model.errors.push_back(i);
    const std::optional<Verdict> v = rc.judgement ? std::optional(rc.judgement->verdict) : std::nullopt;
    if (v == Verdict::kSlower) model.regressions.push_back(i);
    if (v == Verdict::kFaster) model.improvements.push_back(i);
    if (v == Verdict::kNoisy || v == Verdict::kEnvironment || (r.status != CaseStatus::kError && (r.noisy || !r.disturbed.empty())))
      model.noisy.push_back(i);
  }
  // The verdict rests on the speedup: the largest loss (regressions) or gain first.
  const auto by_speedup_change = [&](bool largest_loss_first) {
    return [&, largest_loss_first](size_t a, size_t b) {
      const double ca = model.cases[a].judgement->speedup.change, cb = model.cases[b].judgement->speedup.change;
      return largest_loss_first ? ca < cb : ca > cb;
    };
  };
  std::stable_sort(model.regressions.begin(), model.regressions.end(), by_speedup_change(true));
  std::stable_sort(model.improvements.begin(), model.improvements.end(), by_speedup_change(false));
  for (const std::vector<size_t>* list : {&model.regressions, &model.improvements})
    for (size_t i : *list) explain_in_report(model.cases[i], model.run.info, base_cases, model.baseline->info);

  std::vector<const CaseResult*> run_results;
  for (const ReportCase& rc : model.cases) run_results.push_back(&rc.stored.result);
  std::vector<const CaseResult*> base_results;
  for (const StoredCase& sc : base_cases) base_results.push_back(&sc.result);
  const double load = median_load(run_results), base_load = median_load(base_results);
  model.environment = environment_fields(model.run.info, load, model.baseline ? &model.baseline->info : nullptr, base_load,
                                         gpu_setups(run_results), gpu_setups(base_results));
  model.batch_curves = batch_curves(model.cases);
  return model;
}

}  // namespace fb
