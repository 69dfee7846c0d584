// ResultStore's reads: runs and cases, each column read by the name the column tables in
// columns.h give it, inside one read snapshot so a concurrent writer never shows half a case.
#include "harness/store/result_store.h"

#include <algorithm>

#include "harness/store/columns.h"
#include "harness/store/sqlite_statement.h"

namespace fb {

using store::Statement;

namespace {

std::string run_select(const std::string& where) {
  return "SELECT r.id AS id, r.finished_at AS finished_at, "
         "(SELECT count(*) FROM cases c WHERE c.run_id = r.id) AS case_count, " +
         store::select_list(store::run_columns(), "r.") + " FROM runs r " + where;
}

StoredRun read_run_row(const Statement& s) {
  StoredRun run;
  run.id = s.integer("id");
  run.finished_at = s.text("finished_at");  // NULL reads as ""
  run.case_count = static_cast<int>(s.integer("case_count"));
  try {
    store::read_all(s, store::run_columns(), run.info);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (run " + std::to_string(run.id) + ")");
  }
  return run;
}

}  // namespace

bool ResultStore::run_exists(int64_t run_id) const {
  Statement s(db(), path_, "SELECT 1 FROM runs WHERE id = :id");
  s.bind(":id", run_id);
  return s.step("look up run " + std::to_string(run_id));
}

std::string ResultStore::run_missing(int64_t run_id) const {
  return "run " + std::to_string(run_id) + " is not in " + path_;
}

std::vector<StoredRun> ResultStore::list_runs() const {
  Statement s(db(), path_, run_select("ORDER BY r.started_at, r.id"));
  std::vector<StoredRun> runs;
  while (s.step("list the runs")) runs.push_back(read_run_row(s));
  return runs;
}

std::optional<int64_t> ResultStore::latest_run() const {
  Statement s(db(), path_, "SELECT id FROM runs ORDER BY started_at DESC, id DESC LIMIT 1");
  if (!s.step("find the latest run")) return std::nullopt;
  return s.integer("id");
}

StoredRun ResultStore::load_run(int64_t run_id) const {
  Statement s(db(), path_, run_select("WHERE r.id = :id"));
  s.bind(":id", run_id);
  if (!s.step("load run " + std::to_string(run_id))) throw Error(run_missing(run_id));
  return read_run_row(s);
}

namespace {

// A case's profile, its layers named from the case's own layer map (the same build).
void read_case_profile(Statement& pr, Statement& pl, Statement& pn, int64_t case_id, const std::string& doing,
                       CaseResult& r) {
  pr.bind(":case_id", case_id);
  if (pr.step(doing)) {
    Profile p;
    p.iterations = static_cast<int>(pr.integer("iterations"));
    p.total_ms = pr.real("total_ms");
    r.profile_wall_ms = pr.real("wall_ms");
    pl.bind(":case_id", case_id);
    while (pl.step(doing)) {
      LayerProfile lp;
      store::read_all(pl, store::profile_layer_columns(), lp);
      if (lp.index >= 0 && size_t(lp.index) < r.layers.size()) {
        const LayerRecord& l = r.layers[size_t(lp.index)];
        lp.name = l.name;
        lp.kind = l.kind;
        lp.kernel = l.kernel;
        lp.sources = l.sources;
        lp.flops = l.flops;
        lp.bytes = l.bytes;
      }
      p.layers.push_back(std::move(lp));
    }
    pl.reset();
    pn.bind(":case_id", case_id);
    while (pn.step(doing)) {
      NodeProfile np;
      store::read_all(pn, store::profile_node_columns(), np);
      p.nodes.push_back(std::move(np));
    }
    pn.reset();
    p.modules = roll_up_modules(p.nodes, p.total_ms);
    r.profile = std::move(p);
  }
  pr.reset();
}

}  // namespace

std::vector<StoredCase> ResultStore::load_cases(int64_t run_id, CaseDetail detail) const {
  store::ReadSnapshot snapshot(db(), path_);
  if (!run_exists(run_id)) throw Error(run_missing(run_id));
  const std::string doing = "load the cases of run " + std::to_string(run_id);

  Statement c(db_, path_,
              "SELECT id, config_json, " + store::select_list(store::case_columns()) + " FROM cases WHERE run_id = :run_id ORDER BY id");
  Statement m(db_, path_,
              "SELECT id, executor, " + store::select_list(store::measurement_columns()) +
                  " FROM measurements WHERE case_id = :case_id ORDER BY id");
  Statement smp(db_, path_, "SELECT ms, process FROM samples WHERE measurement_id = :measurement_id ORDER BY iteration");
  Statement b(db_, path_, "SELECT text FROM build_logs WHERE case_id = :case_id");
  Statement l(db_, path_,
              "SELECT " + store::select_list(store::layer_columns()) + " FROM layers WHERE case_id = :case_id ORDER BY layer_index");
  Statement pc(db_, path_, "SELECT " + store::select_list(store::plugin_cost_columns()) + " FROM plugin_costs WHERE case_id = :case_id");
  Statement pg(db_, path_,
               "SELECT " + store::select_list(store::plugin_cost_group_columns()) +
                   " FROM plugin_cost_groups WHERE case_id = :case_id ORDER BY rank");

  Statement fd(db_, path_,
               "SELECT " + store::select_list(store::fusion_decision_columns()) +
                   " FROM fusion_decisions WHERE case_id = :case_id ORDER BY seq");
  Statement pr(db_, path_, "SELECT iterations, total_ms, wall_ms FROM case_profiles WHERE case_id = :case_id");
  Statement pl(db_, path_,
               "SELECT " + store::select_list(store::profile_layer_columns()) +
                   " FROM case_profile_layers WHERE case_id = :case_id ORDER BY layer_index");
  Statement pn(db_, path_,
               "SELECT " + store::select_list(store::profile_node_columns()) +
                   " FROM case_profile_nodes WHERE case_id = :case_id ORDER BY rowid");

  Statement lr(db_, path_, "SELECT peak_qps FROM load_results WHERE case_id = :case_id");
  Statement ls(db_, path_,
               "SELECT " + store::select_list(store::load_step_columns()) + " FROM load_steps WHERE case_id = :case_id ORDER BY step");
  Statement lq(db_, path_,
               "SELECT " + store::select_list(store::load_sample_columns()) +
                   " FROM load_samples WHERE case_id = :case_id AND step = :step ORDER BY sample");

  std::vector<StoredCase> out;
  c.bind(":run_id", run_id);
  while (c.step(doing)) {
    StoredCase sc;
    sc.id = c.integer("id");
    sc.run_id = run_id;
    CaseResult& r = sc.result;
    const std::string where = "case " + std::to_string(sc.id);
    try {
      // The exact configuration comes from config_json; the columns, which queries use,
      // are authoritative for the fields they hold.
      nlohmann::json config;
      try {
        config = nlohmann::json::parse(c.text("config_json"));
      } catch (const nlohmann::json::exception& e) {
        throw Error(path_ + ": config_json is not valid JSON: " + e.what());
      }
      try {
        r.spec = CaseSpec::from_json(config);
      } catch (const Error& e) {
        throw Error(path_ + ": " + e.what());
      }
      store::read_all(c, store::case_columns(), r);
      r.process_noise.processes = r.status == CaseStatus::kError ? 1 : r.spec.timing.processes;

      m.bind(":case_id", sc.id);
      while (m.step(doing)) {
        const std::string executor = m.text("executor");
        Measurement* meas = executor == "engine" ? &r.engine : executor == "reference" ? &r.reference : nullptr;
        if (!meas) continue;  // an executor this build does not know: not part of CaseResult
        meas->executor = executor;
        store::read_all(m, store::measurement_columns(), *meas);
        if (detail == CaseDetail::kSummary) continue;
        smp.bind(":measurement_id", m.integer("id"));
        while (smp.step(doing)) {
          meas->samples_ms.push_back(smp.real("ms"));
          meas->sample_process.push_back(static_cast<int>(smp.integer("process")));
        }
        // All from one process: no indices, as CaseResult keeps them (and as before version 6).
        if (std::all_of(meas->sample_process.begin(), meas->sample_process.end(), [](int p) { return p == 0; }))
          meas->sample_process.clear();
        smp.reset();
      }
      m.reset();
      // A load case's steps: their figures always (gate judges them), every sample's times
      // unless only the summary is asked for.
      lr.bind(":case_id", sc.id);
      if (lr.step(doing)) {
        LoadResult load;
        load.peak_qps = lr.real("peak_qps");
        ls.bind(":case_id", sc.id);
        while (ls.step(doing)) {
          LoadStep step;
          store::read_all(ls, store::load_step_columns(), step.figures);
          if (detail != CaseDetail::kSummary) {
            lq.bind(":case_id", sc.id);
            lq.bind(":step", int64_t(load.steps.size()));
            while (lq.step(doing)) {
              LoadSample q;
              store::read_all(lq, store::load_sample_columns(), q);
              step.samples.push_back(q);
            }
            lq.reset();
          }
          load.steps.push_back(std::move(step));
        }
        ls.reset();
        r.load = std::move(load);
      }
      lr.reset();
      if (detail == CaseDetail::kAll) {
        b.bind(":case_id", sc.id);
        if (b.step(doing)) r.build_log = b.text("text");
        b.reset();
        l.bind(":case_id", sc.id);
        while (l.step(doing)) {
          LayerRecord layer;
          store::read_all(l, store::layer_columns(), layer);
          r.layers.push_back(std::move(layer));
        }
        l.reset();
        fd.bind(":case_id", sc.id);
        while (fd.step(doing)) {
          FusionDecision d;
          store::read_all(fd, store::fusion_decision_columns(), d);
          r.fusion_decisions.push_back(std::move(d));
        }
        fd.reset();
        read_case_profile(pr, pl, pn, sc.id, doing, r);
        pc.bind(":case_id", sc.id);
        if (pc.step(doing)) {
          PluginCost cost;
          store::read_all(pc, store::plugin_cost_columns(), cost);
          pg.bind(":case_id", sc.id);
          while (pg.step(doing)) {
            PreventedFusion f;
            store::read_all(pg, store::plugin_cost_group_columns(), f);
            cost.prevented.push_back(std::move(f));
          }
          pg.reset();
          r.plugin_cost = std::move(cost);
        }
        pc.reset();
      }
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + " (" + where + " of run " + std::to_string(run_id) + ")");
    }
    out.push_back(std::move(sc));
  }
  return out;
}

CaseFigures figures_of(const CaseResult& r) {
  CaseFigures f;
  f.case_key = r.spec.case_key();
  f.status = r.status;
  f.noisy = r.noisy;
  f.engine = {r.engine.stats.median, r.engine.stats.ci_low, r.engine.stats.ci_high};
  f.reference = {r.reference.stats.median, r.reference.stats.ci_low, r.reference.stats.ci_high};
  f.speedup = {r.speedup, r.speedup_ci_low, r.speedup_ci_high};
  return f;
}

std::vector<CaseFigures> ResultStore::load_case_figures(int64_t run_id) const {
  store::ReadSnapshot snapshot(db(), path_);
  if (!run_exists(run_id)) throw Error(run_missing(run_id));
  // A missing measurement (an errored case) reads as NULL, i.e. NaN, through the LEFT JOINs.
  Statement s(db_, path_,
              "SELECT c.case_key AS case_key, c.status AS status, c.noisy AS noisy, c.speedup AS speedup, "
              "c.speedup_ci_low AS speedup_low, c.speedup_ci_high AS speedup_high, "
              "e.median_ms AS engine, e.ci_low_ms AS engine_low, e.ci_high_ms AS engine_high, "
              "r.median_ms AS reference, r.ci_low_ms AS reference_low, r.ci_high_ms AS reference_high "
              "FROM cases c "
              "LEFT JOIN measurements e ON e.case_id = c.id AND e.executor = 'engine' "
              "LEFT JOIN measurements r ON r.case_id = c.id AND r.executor = 'reference' "
              "WHERE c.run_id = :run_id ORDER BY c.id");
  s.bind(":run_id", run_id);
  std::vector<CaseFigures> out;
  while (s.step("load the case figures of run " + std::to_string(run_id))) {
    CaseFigures f;
    f.case_key = s.text("case_key");
    f.status = parse_case_status(s.text("status"), path_ + ": column status");
    f.noisy = s.integer("noisy") != 0;
    f.engine = {s.real("engine"), s.real("engine_low"), s.real("engine_high")};
    f.reference = {s.real("reference"), s.real("reference_low"), s.real("reference_high")};
    f.speedup = {s.real("speedup"), s.real("speedup_low"), s.real("speedup_high")};
    out.push_back(std::move(f));
  }
  return out;
}

std::optional<MachinePeaks> ResultStore::cached_peaks(const std::string& host, const std::string& cpu_model, int threads) const {
  Statement s(db(), path_,
              "SELECT gflops, gbps FROM machine_peaks WHERE host = :host AND cpu_model = :cpu_model AND threads = :threads");
  s.bind(":host", host);
  s.bind(":cpu_model", cpu_model);
  s.bind(":threads", threads);
  if (!s.step("read the cached machine peaks")) return std::nullopt;
  return MachinePeaks{s.real("gflops"), s.real("gbps")};
}

}  // namespace fb
