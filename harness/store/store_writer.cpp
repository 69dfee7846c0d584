// ResultStore's writes: runs, cases (one transaction each), profiles and machine peaks.
// The INSERTs of the tables with column tables (runs, cases, measurements, layers, fusion
// decisions, profiles per case, plugin costs; harness/store/columns.h) are generated from
// them and bind by name; the small fixed tables' (samples, build logs, stored profiles,
// machine peaks) are written out here.
#include <sqlite3.h>

#include "engine/util/build_info.h"
#include "harness/store/columns.h"
#include "harness/store/result_store.h"
#include "harness/store/sqlite_statement.h"

namespace fb {

using store::Statement;
using store::Transaction;

namespace {

std::string dump_json(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

}  // namespace

int64_t ResultStore::begin_run(const RunInfo& info) {
  Statement s(db(), path_, store::insert_sql("runs", store::run_columns()));
  store::bind_all(s, store::run_columns(), info);
  s.run("record a new run");
  return sqlite3_last_insert_rowid(db_);
}

void ResultStore::finish_run(int64_t run_id, const std::string& finished_at) {
  Statement s(db(), path_, "UPDATE runs SET finished_at = :finished_at WHERE id = :id");
  s.bind(":finished_at", finished_at.empty() ? utc_now_iso8601() : finished_at);
  s.bind(":id", run_id);
  s.run("mark run " + std::to_string(run_id) + " finished");
  if (sqlite3_changes(db_) == 0) throw Error(run_missing(run_id));
}

void ResultStore::set_merged_from(int64_t run_id, const nlohmann::json& merged_from) {
  Statement s(db(), path_, "UPDATE runs SET merged_from_json = :merged_from_json WHERE id = :id");
  s.bind(":merged_from_json", dump_json(merged_from));
  s.bind(":id", run_id);
  s.run("record the shards merged into run " + std::to_string(run_id));
  if (sqlite3_changes(db_) == 0) throw Error(run_missing(run_id));
}

void ResultStore::write_case(int64_t run_id, const CaseResult& r, std::optional<int64_t> replacing) {
  const std::string what = "store case '" + r.spec.label() + "'";
  try {
    Transaction tx(db(), path_, what);
    if (!run_exists(run_id)) throw Error(run_missing(run_id) + "; cannot " + what);
    if (replacing) {
      // The record of a lost attempt gives way to the result, in the same transaction.
      Statement d(db_, path_, "DELETE FROM cases WHERE id = :id AND run_id = :run_id AND worker_lost = 1");
      d.bind(":id", *replacing);
      d.bind(":run_id", run_id);
      d.run(what + " (replacing the lost attempt " + std::to_string(*replacing) + ")");
    }

    Statement c(db_, path_, store::insert_sql("cases", store::case_columns(), {"run_id"}));
    c.bind(":run_id", run_id);
    store::bind_all(c, store::case_columns(), r);
    c.run(what);
    const int64_t case_id = sqlite3_last_insert_rowid(db_);

    Statement m(db_, path_, store::insert_sql("measurements", store::measurement_columns(), {"case_id", "executor"}));
    Statement smp(db_, path_, "INSERT INTO samples (measurement_id, iteration, ms, process) VALUES (:measurement_id, :iteration, :ms, :process)");
    // The executor column names the CaseResult member, so loading puts each back in place.
    for (auto [executor, meas] : {std::pair<const char*, const Measurement*>{"engine", &r.engine}, {"reference", &r.reference}}) {
      m.bind(":case_id", case_id);
      m.bind(":executor", executor);
      store::bind_all(m, store::measurement_columns(), *meas);
      m.run(what + " (" + executor + " measurement)");
      const int64_t measurement_id = sqlite3_last_insert_rowid(db_);
      for (size_t i = 0; i < meas->samples_ms.size(); ++i) {
        smp.bind(":measurement_id", measurement_id);
        smp.bind(":iteration", i);
        smp.bind(":ms", meas->samples_ms[i]);
        smp.bind(":process", meas->sample_process.empty() ? 0 : meas->sample_process[i]);
        smp.run(what + " (" + executor + " sample " + std::to_string(i) + ")");
      }
    }

    if (!r.build_log.empty()) {
      Statement b(db_, path_, "INSERT INTO build_logs (case_id, text) VALUES (:case_id, :text)");
      b.bind(":case_id", case_id);
      b.bind(":text", r.build_log);
      b.run(what + " (build log)");
    }

    Statement l(db_, path_, store::insert_sql("layers", store::layer_columns(), {"case_id"}));
    for (const LayerRecord& layer : r.layers) {
      l.bind(":case_id", case_id);
      store::bind_all(l, store::layer_columns(), layer);
      l.run(what + " (layer " + std::to_string(layer.index) + " '" + layer.name + "')");
    }

    Statement fd(db_, path_, store::insert_sql("fusion_decisions", store::fusion_decision_columns(), {"case_id", "seq"}));
    for (size_t k = 0; k < r.fusion_decisions.size(); ++k) {
      fd.bind(":case_id", case_id);
      fd.bind(":seq", int64_t(k));
      store::bind_all(fd, store::fusion_decision_columns(), r.fusion_decisions[k]);
      fd.run(what + " (fusion decision " + std::to_string(k) + ")");
    }

    if (r.profile) {
      Statement pr(db_, path_,
                   "INSERT INTO case_profiles (case_id, iterations, total_ms, wall_ms) "
                   "VALUES (:case_id, :iterations, :total_ms, :wall_ms)");
      pr.bind(":case_id", case_id);
      pr.bind(":wall_ms", r.profile_wall_ms);
      pr.bind(":iterations", r.profile->iterations);
      pr.bind(":total_ms", r.profile->total_ms);
      pr.run(what + " (profile)");
      Statement pl(db_, path_, store::insert_sql("case_profile_layers", store::profile_layer_columns(), {"case_id"}));
      for (const LayerProfile& lp : r.profile->layers) {
        pl.bind(":case_id", case_id);
        store::bind_all(pl, store::profile_layer_columns(), lp);
        pl.run(what + " (profile of layer " + std::to_string(lp.index) + ")");
      }
      Statement pn(db_, path_, store::insert_sql("case_profile_nodes", store::profile_node_columns(), {"case_id"}));
      for (const NodeProfile& np : r.profile->nodes) {
        pn.bind(":case_id", case_id);
        store::bind_all(pn, store::profile_node_columns(), np);
        pn.run(what + " (profile of node '" + np.node + "')");
      }
    }

    if (r.plugin_cost) {
      Statement pc(db_, path_, store::insert_sql("plugin_costs", store::plugin_cost_columns(), {"case_id"}));
      pc.bind(":case_id", case_id);
      store::bind_all(pc, store::plugin_cost_columns(), *r.plugin_cost);
      pc.run(what + " (plugin cost)");
      Statement pg(db_, path_, store::insert_sql("plugin_cost_groups", store::plugin_cost_group_columns(), {"case_id", "rank"}));
      for (size_t k = 0; k < r.plugin_cost->prevented.size(); ++k) {
        pg.bind(":case_id", case_id);
        pg.bind(":rank", int64_t(k));
        store::bind_all(pg, store::plugin_cost_group_columns(), r.plugin_cost->prevented[k]);
        pg.run(what + " (plugin cost group " + std::to_string(k) + ")");
      }
    }
    if (r.load) {
      // Every sample of every step through one prepared statement, in this transaction:
      // a second or so of rows costs milliseconds, after the run, never during it.
      Statement ls(db_, path_, store::insert_sql("load_steps", store::load_step_columns(), {"case_id", "step"}));
      Statement lq(db_, path_, store::insert_sql("load_samples", store::load_sample_columns(), {"case_id", "step", "sample"}));
      for (size_t k = 0; k < r.load->steps.size(); ++k) {
        const LoadStep& step = r.load->steps[k];
        ls.bind(":case_id", case_id);
        ls.bind(":step", int64_t(k));
        store::bind_all(ls, store::load_step_columns(), step.figures);
        ls.run(what + " (load step " + std::to_string(k) + ")");
        for (size_t i = 0; i < step.samples.size(); ++i) {
          lq.bind(":case_id", case_id);
          lq.bind(":step", int64_t(k));
          lq.bind(":sample", int64_t(i));
          store::bind_all(lq, store::load_sample_columns(), step.samples[i]);
          lq.run(what + " (load step " + std::to_string(k) + " sample " + std::to_string(i) + ")");
        }
      }
      Statement lr(db_, path_, "INSERT INTO load_results (case_id, peak_qps) VALUES (:case_id, :peak_qps)");
      lr.bind(":case_id", case_id);
      lr.bind(":peak_qps", r.load->peak_qps);
      lr.run(what + " (load result)");
    }
    tx.commit();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(path_ + ": cannot " + what + ": " + e.what());
  }
}

int64_t ResultStore::write_profile(const StoredProfile& sp) {
  const std::string what = "store the profile of " + sp.model;
  Transaction tx(db(), path_, what);
  Statement p(db_, path_,
              "INSERT INTO profiles (created_at, git_commit, model, model_hash, config_json, iterations, total_ms, "
              "peak_gflops, peak_gbps) VALUES (:created_at, :git_commit, :model, :model_hash, :config_json, :iterations, "
              ":total_ms, :peak_gflops, :peak_gbps)");
  p.bind(":created_at", utc_now_iso8601());
  p.bind(":git_commit", fusebench_git_commit());
  p.bind(":model", sp.model);
  p.bind(":model_hash", sp.model_hash);
  p.bind(":config_json", sp.config_json);
  p.bind(":iterations", sp.profile.iterations);
  p.bind(":total_ms", sp.profile.total_ms);
  p.bind(":peak_gflops", sp.peaks.gflops);
  p.bind(":peak_gbps", sp.peaks.gbps);
  p.run(what);
  const int64_t id = sqlite3_last_insert_rowid(db_);
  Statement l(db_, path_,
              "INSERT INTO profile_layers (profile_id, layer_index, name, kind, kernel, median_ms, flops, bytes, sources_json) "
              "VALUES (:profile_id, :layer_index, :name, :kind, :kernel, :median_ms, :flops, :bytes, :sources_json)");
  for (const LayerProfile& lp : sp.profile.layers) {
    l.bind(":profile_id", id);
    l.bind(":layer_index", lp.index);
    l.bind(":name", lp.name);
    l.bind(":kind", lp.kind);
    l.bind(":kernel", lp.kernel);
    l.bind(":median_ms", lp.median_ms);
    l.bind(":flops", lp.flops);
    l.bind(":bytes", lp.bytes);
    l.bind(":sources_json", dump_json(nlohmann::json(lp.sources)));
    l.run(what);
  }
  Statement n(db_, path_,
              "INSERT INTO profile_nodes (profile_id, node, module, layer_index, ms, estimated) "
              "VALUES (:profile_id, :node, :module, :layer_index, :ms, :estimated)");
  for (const NodeProfile& np : sp.profile.nodes) {
    n.bind(":profile_id", id);
    n.bind(":node", np.node);
    n.bind(":module", np.module);
    n.bind(":layer_index", np.layer);
    n.bind(":ms", np.ms);
    n.bind(":estimated", np.estimated);
    n.run(what);
  }
  tx.commit();
  return id;
}

void ResultStore::store_peaks(const std::string& host, const std::string& cpu_model, int threads, const MachinePeaks& peaks) {
  Statement s(db(), path_,
              "INSERT OR REPLACE INTO machine_peaks (host, cpu_model, threads, gflops, gbps, measured_at) "
              "VALUES (:host, :cpu_model, :threads, :gflops, :gbps, :measured_at)");
  s.bind(":host", host);
  s.bind(":cpu_model", cpu_model);
  s.bind(":threads", threads);
  s.bind(":gflops", peaks.gflops);
  s.bind(":gbps", peaks.gbps);
  s.bind(":measured_at", utc_now_iso8601());
  s.run("cache the machine peaks");
}

}  // namespace fb
