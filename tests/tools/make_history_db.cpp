// Writes a synthetic nightly history through ResultStore's own API (so it always matches
// the schema): RUNS runs of CASES cases, each with seeded samples around a per-case median,
// a 5% engine slowdown from run STEP_AT in every 10th case, a layer map, a build log, and
// stored profiles for the last two runs. It feeds the report's scale check
// (scripts/scale_report.sh: 365 runs x 200 cases) and the browser test (a few cases with
// hostile names: --hostile). The figures are made up; nothing here is a measurement.
//
//   make_history_db --db FILE [--runs 365] [--cases 200] [--samples 30] [--step-at 300] [--hostile]
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>

#include <sqlite3.h>
#include <string>
#include <vector>

#include "engine/ir/error.h"
#include "harness/stats/random.h"
#include "harness/stats/statistics.h"
#include "harness/store/result_store.h"

namespace {

using namespace fb;

// Names that must come out of a report escaped, never as markup or script.
const char* const kHostile = "<script>alert(\"x\")</script> 'q' </textarea> \"</script><!-- \nzweite Zeile größe ✓ 日本";

std::string hex_of(uint64_t v, size_t digits) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < digits; ++i) s += d[(v >> (4 * (i % 16))) & 15], v = v * 6364136223846793005ull + 1442695040888963407ull;
  return s;
}

std::string day(int n) {  // 2026-01-01 + n days, 02:00 UTC
  int y = 2026, m = 1, d = 1 + n;
  const int len[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  while (d > len[m - 1] + (m == 2 && y % 4 == 0)) {
    d -= len[m - 1] + (m == 2 && y % 4 == 0);
    if (++m > 12) m = 1, ++y;
  }
  char buf[48];  // room for any int, so that g++ sees no truncation
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT02:00:00Z", y, m, d);
  return buf;
}

Measurement measure(const char* executor, double median, int n, double noise, Rng& rng) {
  Measurement m;
  m.executor = executor;
  for (int i = 0; i < n; ++i) m.samples_ms.push_back(median * std::exp(noise * rng.normal()));
  std::vector<double> s = m.samples_ms;
  std::sort(s.begin(), s.end());
  SampleStats& st = m.stats;  // compute_stats would bootstrap each: too slow for 146,000 measurements
  st.n = s.size();
  st.median = percentile(s, 0.5);
  st.p90 = percentile(s, 0.9), st.p95 = percentile(s, 0.95), st.p99 = percentile(s, 0.99);
  st.min = s.front(), st.max = s.back();
  double sum = 0, sq = 0;
  for (double v : s) sum += v, sq += v * v;
  st.mean = sum / double(n);
  st.stddev = std::sqrt(std::max(0.0, (sq - sum * st.mean) / double(n - 1)));
  st.cv = st.stddev / st.mean;
  std::tie(st.ci_low, st.ci_high) = median_ci(s);
  st.boot_ci_low = st.ci_low, st.boot_ci_high = st.ci_high;
  m.items_per_s = 1000 / st.median;
  m.first_iteration_ms = st.max * 3;
  return m;
}

struct Args {
  std::string db;
  int runs = 365, cases = 200, samples = 30, step_at = 300;
  bool hostile = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error(k + " needs a value");
      return argv[++i];
    };
    if (k == "--db") a.db = value();
    else if (k == "--runs") a.runs = std::stoi(value());
    else if (k == "--cases") a.cases = std::stoi(value());
    else if (k == "--samples") a.samples = std::stoi(value());
    else if (k == "--step-at") a.step_at = std::stoi(value());
    else if (k == "--hostile") a.hostile = true;
    else throw Error("unknown argument " + k);
  }
  if (a.db.empty() || a.runs < 1 || a.cases < 1 || a.samples < 6) throw Error("usage: make_history_db --db FILE [--runs N] ...");
  return a;
}

}  // namespace

int main(int argc, char** argv) try {
  const Args a = parse(argc, argv);
  ResultStore store(a.db);
  const char* fusions[] = {"none", "standard", "aggressive"};
  const int64_t batches[] = {1, 2, 4, 8};
  // The layers every case's engine has: name, kind, source nodes (module paths as exporters write them).
  struct Layer {
    std::string name, kind;
    std::vector<std::string> sources;
    double share, gflop;
  };
  const std::string weird = a.hostile ? std::string(kHostile) : "proj";
  std::vector<Layer> layers = {{"/embeddings/Gather", "Gather", {"/embeddings/Gather"}, 0.02, 0}};
  for (int e = 0; e < 3; ++e) {
    const std::string p = "/encoder/layer." + std::to_string(e) + "/";
    layers.push_back({p + "attention/fused", "fusebench.Attention",
                      {p + "attention/self/query/MatMul", p + "attention/self/key/MatMul", p + "attention/self/value/MatMul",
                       p + "attention/self/Softmax"}, 0.11, 2.1});
    layers.push_back({p + "attention/output/" + weird, "fusebench.FusedMatMul",
                      {p + "attention/output/dense/MatMul", p + "attention/output/" + weird}, 0.04, 0.5});
    layers.push_back({p + "output/LayerNorm", "fusebench.AddLayerNorm", {p + "output/Add", p + "output/LayerNorm/ReduceMean"},
                      0.02, 0.01});
    layers.push_back({p + "intermediate/dense", "fusebench.FusedMatMul",
                      {p + "intermediate/dense/MatMul", p + "intermediate/dense/Add", p + "intermediate/intermediate_act_fn/Erf"},
                      0.09, 2.0});
    layers.push_back({p + "output/dense", "fusebench.FusedMatMul", {p + "output/dense/MatMul"}, 0.07, 2.0});
  }
  std::string build_log = "imported: 107 nodes, 16 initializers, opset 17, batch 1\nfusion level: standard\n"
                          "after identity_elimination: 101 layers (6 rewrites)\nafter gelu_fusion: 93 layers (1 rewrites)\n"
                          "after attention_fusion: 81 layers (1 rewrites)\nafter matmul_bias_fusion: 16 layers (65 rewrites)\n"
                          "after fusion: 16 layers from 107 ONNX nodes\n";
  Rng rng(42);
  const int64_t first_run_with_profile = a.runs - 2;
  for (int r = 0; r < a.runs; ++r) {
    RunInfo info;
    info.started_at = day(r);
    info.git_commit = hex_of(uint64_t(r / 3 + 1), 40);  // a new commit every third night
    info.host = a.hostile && r % 2 ? std::string("host-") + kHostile : "nightly-01";
    info.cpu_model = "AMD EPYC 9B45 (synthetic)";
    info.cpu_flags = "avx2 avx512f avx512_bf16 avx512_vnni";
    info.cores = 16;
    info.memory_bytes = int64_t(64) << 30;
    info.kernel = r >= a.step_at ? "Linux 6.1.0-28-amd64" : "Linux 6.1.0-27-amd64";
    info.compiler = "g++ 12.2.0";
    info.compiler_flags = "Release: -O2 -march=native -DNDEBUG";
    info.library_versions = {{"onednn", r >= a.step_at ? "3.1.1" : "2.7.3"}, {"sqlite", "3.40.1"}, {"tbb", "2021.8.0"}};
    info.fusebench_version = "0.1.0";
    info.command = "fusebench run scenarios/nightly.json --db nightly.db (synthetic: make_history_db)";
    const int64_t run = store.begin_run(info);
    for (int c = 0; c < a.cases; ++c) {
      CaseResult res;
      CaseSpec& s = res.spec;
      const int model = c / 12;
      s.scenario = a.hostile && model == 0 ? std::string("scenario ") + kHostile : "nightly-" + std::to_string(model);
      s.model = "zoo:bert?layers=" + std::to_string(1 + model % 4) + "&hidden=" + std::to_string(64 << (model % 3)) +
                (a.hostile && model == 0 ? std::string("&name=") + kHostile : "&seq=" + std::to_string(16 + model));
      s.model_hash = hex_of(uint64_t(model + 1000), 64);
      s.batch = batches[c % 4];
      s.fusion = fb::parse_fusion_level(fusions[(c / 4) % 3]);
      s.threads = 1;
      s.gate.min_speedup = 1.0;
      s.gate.max_regression = 0.05;
      const bool regressed = c % 10 == 3 && r >= a.step_at;
      const double eng = (0.2 + 0.05 * model + 0.03 * double(s.batch)) * (1 + 0.4 * ((c / 4) % 3 == 0)) *
                         (regressed ? 1.06 : 1.0) * (1 + 0.004 * rng.normal());
      const double ref = (0.35 + 0.07 * model + 0.05 * double(s.batch)) * (1 + 0.004 * rng.normal());
      res.engine = measure("engine", eng, a.samples, 0.02, rng);
      res.reference = measure("reference", ref, a.samples, 0.02, rng);
      res.speedup = res.reference.stats.median / res.engine.stats.median;
      res.speedup_ci_low = res.reference.stats.ci_low / res.engine.stats.ci_high;
      res.speedup_ci_high = res.reference.stats.ci_high / res.engine.stats.ci_low;
      res.stop_reason = c % 17 == 5 ? "time-cap" : "converged";
      res.noisy = c % 17 == 5;
      res.accuracy = {3e-6, 1e-5, 0.99999999, true, ""};
      res.interference = {0.4 + rng.uniform(), 0.5 + rng.uniform(), 20, 600, 3000, 3000};
      res.build_ms = 12;
      res.onnx_nodes = 107;
      res.build_log = build_log;
      for (size_t l = 0; l < layers.size(); ++l) res.layers.push_back({int(l), layers[l].name, layers[l].kind, layers[l].sources});
      if (a.hostile && c == 1) {
        res.status = fb::CaseStatus::kError;
        res.error = std::string("build failed at node ") + kHostile;
      }
      store.write_case(run, res);
    }
    store.finish_run(run);
    // Profiles right after the last two runs, for the first case of each model: the newer
    // one with the regressed layer slower.
    if (r >= first_run_with_profile)
      for (int model = 0; model * 12 < a.cases; ++model) {
        StoredProfile p;
        p.model = "zoo:bert";
        p.model_hash = hex_of(uint64_t(model + 1000), 64);
        p.config_json = R"({"batch":1,"exclude_nodes":[],"exclude_ops":[],"fusion":"none","partition_points":[],"threads":1})";
        p.peaks = {180, 40};
        p.profile.iterations = 50;
        for (size_t l = 0; l < layers.size(); ++l) {
          const double ms = 0.3 * layers[l].share * (r == a.runs - 1 && l == 2 ? 1.5 : 1.0);
          p.profile.layers.push_back({int(l), layers[l].name, layers[l].kind, "onednn.matmul", ms, layers[l].gflop * 1e6 * 0.3, 4e5,
                                      layers[l].sources});
          p.profile.total_ms += ms;
          for (const std::string& src : layers[l].sources)
            p.profile.nodes.push_back({src, module_of(src), int(l), ms / double(layers[l].sources.size()), layers[l].sources.size() > 1});
        }
        const int64_t id = store.write_profile(p);
        // write_profile stamps the clock; the report matches a profile to the run it follows
        // by time, so give it this synthetic night's time (an hour after the run began).
        sqlite3* db = nullptr;
        sqlite3_open(a.db.c_str(), &db);
        const std::string sql = "UPDATE profiles SET created_at = '" + day(r).replace(11, 2, "03") +
                                "' WHERE id = " + std::to_string(id);
        const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
        sqlite3_close(db);
        if (rc != SQLITE_OK) throw Error(a.db + ": cannot date profile " + std::to_string(id));
      }
  }
  std::cout << "make_history_db: " << a.runs << " runs x " << a.cases << " cases in " << a.db << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "make_history_db: " << e.what() << "\n";
  return 2;
}
