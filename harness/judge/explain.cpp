#include "harness/judge/explain.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "engine/ir/error.h"
#include "engine/runtime/profiler.h"
#include "harness/cases/case_profile.h"
#include "harness/stats/statistics.h"
#include "harness/util/format_number.h"

namespace fb {
namespace {

using json = nlohmann::json;

const Profile& profile_of(const ExplainSide& s, const char* side) {
  const CaseResult& r = s.stored->result;
  if (!r.profile)
    throw Error("run " + std::to_string(s.stored->run_id) + ", case '" + r.spec.label() + "' [" + r.spec.case_key() +
                "] (the " + side + ") has no stored profile: run it with \"profile\": {\"iterations\": N} in its scenario");
  return *r.profile;
}

// Per-run sums of the given layers' times (run k of each layer is one engine run).
std::vector<double> per_run_sum(const Profile& p, const std::vector<int>& layers) {
  std::vector<double> sum;
  for (int i : layers) {
    const std::vector<double>& s = p.layers[size_t(i)].samples_ms;
    if (sum.empty()) sum.assign(s.size(), 0.0);
    if (s.size() != sum.size()) return {};  // runs that do not line up give no interval
    for (size_t k = 0; k < s.size(); ++k) sum[k] += s[k];
  }
  return sum;
}

// The 95% interval of a change whose point estimate is `delta` (a difference of sums of
// medians), from the runs' sums on each side: the bootstrap interval of the difference of
// their medians, moved to centre on `delta` (the two differ by a little: the median of a
// sum is not the sum of the medians) so the interval always brackets the change it is
// printed beside. NaN where a side has fewer than two runs.
Interval difference_ci(const std::vector<double>& candidate, const std::vector<double>& baseline, double delta) {
  if (candidate.size() < 2 || baseline.size() < 2) return TimeChange{}.delta_ci;
  const Interval i = bootstrap_difference_ci(candidate, baseline);
  const double shift = delta - (percentile(candidate, 0.5) - percentile(baseline, 0.5));
  return {i.low + shift, i.high + shift};
}

// Union-find over both builds' layers: baseline layer i is i, candidate layer j is nb + j.
struct Groups {
  std::vector<size_t> parent;
  explicit Groups(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), size_t(0)); }
  size_t find(size_t x) { return parent[x] == x ? x : parent[x] = find(parent[x]); }
  void join(size_t a, size_t b) { parent[find(a)] = find(b); }
};

// The longest module path all `nodes` share ("" when none).
std::string common_module(const std::set<std::string>& nodes) {
  std::optional<std::string> common;
  for (const std::string& n : nodes) {
    const std::string m = module_of(n);
    if (!common) {
      common = m;
      continue;
    }
    size_t k = 0;
    while (k < common->size() && k < m.size() && (*common)[k] == m[k]) ++k;
    *common = common->substr(0, k);
    const size_t slash = common->rfind('/');
    *common = slash == std::string::npos ? "" : common->substr(0, slash + 1);
  }
  return common.value_or("");
}

// Each decision's ONNX nodes: a node an earlier fusion made stands for the nodes it replaced.
std::vector<std::set<std::string>> decision_nodes(const std::vector<FusionDecision>& decisions) {
  std::map<std::string, std::set<std::string>> made;
  std::vector<std::set<std::string>> out;
  for (const FusionDecision& d : decisions) {
    std::set<std::string> nodes;
    for (const std::string& n : d.nodes) {
      auto it = made.find(n);
      if (it == made.end()) nodes.insert(n);
      else nodes.insert(it->second.begin(), it->second.end());
    }
    if (!d.fused.empty()) made[d.fused] = nodes;
    out.push_back(std::move(nodes));
  }
  return out;
}

std::string outcome(const FusionDecision& d, size_t nodes) {
  return d.fused.empty() ? "refused: " + d.refused
                         : "fused " + std::to_string(nodes) + " nodes into '" + d.fused + "'";
}

// The decisions touching `region` whose outcome differs between the builds, by pass and root.
std::vector<DecisionChange> decision_changes(const CaseResult& base, const CaseResult& cand,
                                             const std::set<std::string>& region) {
  // Where a build made no decision at a root, say whether its pass decided anything at all:
  // "not run" (another fusion level, or nothing anywhere matched) reads differently from a
  // pass that ran and whose rule no longer matches here (the graph around it changed).
  const auto not_tried = [](const CaseResult& r, const std::string& pass) {
    const auto decided = std::count_if(r.fusion_decisions.begin(), r.fusion_decisions.end(),
                                       [&](const FusionDecision& d) { return d.pass == pass; });
    return decided ? "not tried: the pass ran (" + std::to_string(decided) + " decisions elsewhere), its rule did not match here"
                   : std::string("not tried: the pass made no decision in this build");
  };
  struct Outcomes {
    std::string baseline, candidate;
  };
  std::map<std::pair<std::string, std::string>, Outcomes> by_root;
  std::vector<std::pair<std::string, std::string>> order;
  const auto collect = [&](const CaseResult& r, bool candidate) {
    const std::vector<std::set<std::string>> nodes = decision_nodes(r.fusion_decisions);
    for (size_t i = 0; i < r.fusion_decisions.size(); ++i) {
      const FusionDecision& d = r.fusion_decisions[i];
      if (std::none_of(nodes[i].begin(), nodes[i].end(), [&](const std::string& n) { return region.count(n) > 0; }))
        continue;
      const auto key = std::make_pair(d.pass, d.root);
      if (!by_root.count(key)) order.push_back(key);
      (candidate ? by_root[key].candidate : by_root[key].baseline) = outcome(d, nodes[i].size());
    }
  };
  collect(base, false);
  collect(cand, true);
  std::vector<DecisionChange> out;
  for (const auto& key : order) {
    Outcomes& o = by_root[key];
    if (o.baseline == o.candidate) continue;
    if (o.baseline.empty()) o.baseline = not_tried(base, key.first);
    if (o.candidate.empty()) o.candidate = not_tried(cand, key.first);
    out.push_back({key.first, key.second, o.baseline, o.candidate});
  }
  return out;
}

std::string shapes_text(const std::vector<std::vector<int64_t>>& shapes) { return json(shapes).dump(); }

std::string layer_text(const LayerRecord& l) {
  return "#" + std::to_string(l.index) + " " + l.kind + " '" + l.name + "' (" + l.kernel + ", " + l.precision + ")";
}

// What changed in a layer both builds made from the same nodes.
std::vector<std::string> layer_changes(const LayerRecord& b, const LayerRecord& c) {
  std::vector<std::string> out;
  const auto add = [&](const char* what, const std::string& x, const std::string& y, const std::string& why = "") {
    if (x != y) out.push_back(std::string(what) + ": " + x + " → " + y + why);
  };
  add("kind", b.kind, c.kind);
  add("kernel", b.kernel, c.kernel);
  add("precision", b.precision, c.precision, b.precision != c.precision ? " (" + c.precision_reason + ")" : "");
  add("input shapes", shapes_text(b.input_shapes), shapes_text(c.input_shapes));
  add("output shapes", shapes_text(b.output_shapes), shapes_text(c.output_shapes));
  return out;
}

std::vector<RegionChange> regions_of(const CaseResult& base, const Profile& bp, const CaseResult& cand,
                                     const Profile& cp) {
  const size_t nb = bp.layers.size(), nc = cp.layers.size();
  Groups groups(nb + nc);
  std::map<std::string, size_t> owner;  // an ONNX node (or "layer:NAME") → the first layer seen with it
  const auto link = [&](const std::string& key, size_t layer) {
    auto [it, fresh] = owner.emplace(key, layer);
    if (!fresh) groups.join(it->second, layer);
  };
  const auto keys_of = [](const LayerProfile& l) {
    return l.sources.empty() ? std::vector<std::string>{"layer:" + l.name} : l.sources;
  };
  for (size_t i = 0; i < nb; ++i)
    for (const std::string& k : keys_of(bp.layers[i])) link(k, i);
  for (size_t j = 0; j < nc; ++j)
    for (const std::string& k : keys_of(cp.layers[j])) link(k, nb + j);

  std::map<size_t, RegionChange> by_root;
  std::map<size_t, std::set<std::string>> nodes;
  for (size_t x = 0; x < nb + nc; ++x) {
    RegionChange& r = by_root[groups.find(x)];
    const bool candidate = x >= nb;
    const LayerProfile& l = candidate ? cp.layers[x - nb] : bp.layers[x];
    (candidate ? r.candidate_layers : r.baseline_layers).push_back(l.index);
    (candidate ? r.time.candidate_ms : r.time.baseline_ms) += l.median_ms;
    nodes[groups.find(x)].insert(l.sources.begin(), l.sources.end());
  }
  std::vector<RegionChange> out;
  for (auto& [root, r] : by_root) {
    const std::set<std::string>& n = nodes[root];
    r.nodes = n.size();
    r.module = common_module(n);
    // A side without layers here took no time in any run.
    std::vector<double> runs_b = per_run_sum(bp, r.baseline_layers), runs_c = per_run_sum(cp, r.candidate_layers);
    if (r.baseline_layers.empty()) runs_b.assign(runs_c.size(), 0.0);
    if (r.candidate_layers.empty()) runs_c.assign(runs_b.size(), 0.0);
    r.time.delta_ci = difference_ci(runs_c, runs_b, r.time.delta_ms());
    const size_t b = r.baseline_layers.size(), c = r.candidate_layers.size();
    const auto record = [](const CaseResult& res, int i) -> const LayerRecord* {
      return size_t(i) < res.layers.size() ? &res.layers[size_t(i)] : nullptr;
    };
    r.shape = b == 0 ? "only in candidate" : c == 0 ? "only in baseline" : b < c ? "split" : b > c ? "merged"
            : b == 1 && bp.layers[size_t(r.baseline_layers[0])].sources == cp.layers[size_t(r.candidate_layers[0])].sources
                ? "same layer"
                : "regrouped";
    if (r.shape == "same layer") {
      r.name = cp.layers[size_t(r.candidate_layers[0])].name;
      const LayerRecord* lb = record(base, r.baseline_layers[0]);
      const LayerRecord* lc = record(cand, r.candidate_layers[0]);
      if (lb && lc) r.layer_changes = layer_changes(*lb, *lc);
    } else {
      // A layer of one build only (a plugin placed, a copy added) goes by its own name.
      if (b + c == 1) r.name = b ? bp.layers[size_t(r.baseline_layers[0])].name : cp.layers[size_t(r.candidate_layers[0])].name;
      else r.name = (r.module.empty() ? std::string("(no common module)") : r.module) + " (" + std::to_string(r.nodes) + " nodes)";
      for (int i : r.baseline_layers)
        if (const LayerRecord* l = record(base, i)) r.layer_changes.push_back("baseline " + layer_text(*l));
      for (int i : r.candidate_layers)
        if (const LayerRecord* l = record(cand, i)) r.layer_changes.push_back("candidate " + layer_text(*l));
    }
    r.decisions = decision_changes(base, cand, n);
    out.push_back(std::move(r));
  }
  // A region whose build changed comes first: that is the code's (or the settings') doing,
  // where a layer built alike that moved alone may be the machine's. Largest change first
  // within each.
  std::stable_sort(out.begin(), out.end(), [](const RegionChange& a, const RegionChange& b) {
    if (a.built_differently() != b.built_differently()) return a.built_differently();
    return std::fabs(a.time.delta_ms()) > std::fabs(b.time.delta_ms());
  });
  return out;
}

// Each module's time in each profiled run: its nodes' shares of their layers' run times
// (a fused layer's share as the profiler apportioned its median), over every prefix level.
std::map<std::string, std::vector<double>> module_runs(const Profile& p) {
  std::map<std::string, std::vector<double>> out;
  for (const NodeProfile& n : p.nodes) {
    if (n.layer < 0 || size_t(n.layer) >= p.layers.size()) continue;
    const LayerProfile& l = p.layers[size_t(n.layer)];
    if (l.samples_ms.empty() || !(l.median_ms > 0)) continue;
    const double share = n.ms / l.median_ms;
    // Every prefix level of its module path, as roll_up_modules counts it.
    std::vector<std::string> prefixes;
    if (n.module.empty()) prefixes.push_back("(no module)");
    for (size_t pos = 0; (pos = n.module.find('/', pos)) != std::string::npos; ++pos)
      prefixes.push_back(n.module.substr(0, pos + 1));
    for (const std::string& prefix : prefixes) {
      std::vector<double>& runs = out[prefix];
      if (runs.empty()) runs.assign(l.samples_ms.size(), 0.0);
      if (runs.size() == l.samples_ms.size())
        for (size_t k = 0; k < runs.size(); ++k) runs[k] += share * l.samples_ms[k];
    }
  }
  return out;
}

std::vector<ModuleChange> modules_of(const Profile& bp, const Profile& cp) {
  std::map<std::string, ModuleChange> by_path;
  for (const ModuleProfile& m : bp.modules) {
    ModuleChange& c = by_path[m.module];
    c.module = m.module;
    c.time.baseline_ms = m.ms;
    c.estimated = c.estimated || m.estimated;
  }
  for (const ModuleProfile& m : cp.modules) {
    ModuleChange& c = by_path[m.module];
    c.module = m.module;
    c.time.candidate_ms = m.ms;
    c.estimated = c.estimated || m.estimated;
  }
  const auto base_runs = module_runs(bp), cand_runs = module_runs(cp);
  std::vector<ModuleChange> out;
  for (auto& [path, c] : by_path) {
    const auto b = base_runs.find(path), k = cand_runs.find(path);
    if (b != base_runs.end() && k != cand_runs.end()) c.time.delta_ci = difference_ci(k->second, b->second, c.time.delta_ms());
    out.push_back(std::move(c));
  }
  std::stable_sort(out.begin(), out.end(), [](const ModuleChange& a, const ModuleChange& b) {
    return std::fabs(a.time.delta_ms()) > std::fabs(b.time.delta_ms());
  });
  return out;
}

// Leaf values of a JSON object by dotted path ("timing.max_seconds"); lists are leaves.
void flatten(const json& j, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    return;
  }
  out[prefix] = j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::vector<FieldChange> configuration_changes(const CaseSpec& b, const CaseSpec& c) {
  std::map<std::string, std::string> fb, fc;
  flatten(b.to_json(), "", fb);
  flatten(c.to_json(), "", fc);
  std::set<std::string> fields;
  for (const auto& [k, v] : fb) fields.insert(k);
  for (const auto& [k, v] : fc) fields.insert(k);
  std::vector<FieldChange> out;
  for (const std::string& f : fields) {
    // Which scenario a case came from says nothing about its speed.
    if (f == "scenario" || f == "scenario_file") continue;
    const std::string vb = fb.count(f) ? fb[f] : "(unset)", vc = fc.count(f) ? fc[f] : "(unset)";
    if (vb != vc) out.push_back({f, vb, vc});
  }
  return out;
}

// Four decimals: a small model's layers take microseconds.
std::string ms(double v) { return format_number("%.4f", v); }
std::string signed_ms(double v) { return format_number("%+.4f", v); }

// A module whose change one of its children carries (80% or more) is left to the child in
// text: "/encoder/" moving because "/encoder/layer.1/attention/" did says nothing more.
bool carried_by_child(const ModuleChange& m, const std::vector<ModuleChange>& all) {
  const double d = std::fabs(m.time.delta_ms());
  for (const ModuleChange& c : all)
    if (c.module.size() > m.module.size() && c.module.rfind(m.module, 0) == 0 && std::fabs(c.time.delta_ms()) >= 0.8 * d &&
        (c.time.delta_ms() >= 0) == (m.time.delta_ms() >= 0))
      return true;
  return false;
}

std::string interval_text(const Interval& i) {
  if (!std::isfinite(i.low) || !std::isfinite(i.high)) return "(no interval)";
  return "[" + signed_ms(i.low) + ", " + signed_ms(i.high) + "]";
}

std::string change_line(const TimeChange& t) {
  return ms(t.baseline_ms) + " → " + ms(t.candidate_ms) + " ms, " + signed_ms(t.delta_ms()) + " ms " +
         interval_text(t.delta_ci);
}

json number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json time_json(const TimeChange& t) {
  return {{"baseline_ms", number(t.baseline_ms)},
          {"candidate_ms", number(t.candidate_ms)},
          {"delta_ms", number(t.delta_ms())},
          {"delta_ci_ms", {number(t.delta_ci.low), number(t.delta_ci.high)}}};
}

std::string mib(int64_t bytes) { return format_number("%.2f MiB", double(bytes) / (1024.0 * 1024.0)); }

}  // namespace

std::vector<std::string> layer_changes_shown(const RegionChange& r, size_t per_side) {
  std::vector<std::string> out;
  size_t shown_baseline = 0, shown_candidate = 0, left = 0;
  for (const std::string& c : r.layer_changes) {
    size_t& shown = c.rfind("candidate ", 0) == 0 ? shown_candidate : shown_baseline;
    if (r.shape != "same layer" && shown++ >= per_side) ++left;
    else out.push_back(c);
  }
  if (left) out.push_back("... and " + std::to_string(left) + " more layers");
  return out;
}

std::vector<std::string> cautions(const Explanation& e) {
  std::vector<std::string> out;
  for (const auto& [side, ratio] : {std::pair{"baseline", e.baseline_profile_ratio}, {"candidate", e.candidate_profile_ratio}})
    if (std::isfinite(ratio) && ratio > kProfileSlack)
      out.push_back("the " + std::string(side) + "'s layers add up to " + format_number("%.2f", ratio) +
                    "x its timed median: the machine was busier while it was profiled, and its layer times with it");
  return out;
}

bool RegionChange::built_differently() const {
  return shape != "same layer" || !decisions.empty() || !layer_changes.empty();
}

bool Explanation::reconciled() const {
  const double d = profiled.delta_ms();
  return std::isfinite(measured.delta_ci.low) && d >= measured.delta_ci.low && d <= measured.delta_ci.high;
}

Explanation explain_cases(const ExplainSide& baseline, const ExplainSide& candidate, std::optional<CaseJudgement> judgement) {
  const Profile& bp = profile_of(baseline, "baseline");
  const Profile& cp = profile_of(candidate, "candidate");
  const CaseResult& b = baseline.stored->result;
  const CaseResult& c = candidate.stored->result;
  Explanation e;
  e.baseline_label = b.spec.label();
  e.candidate_label = c.spec.label();
  e.baseline_key = b.spec.case_key();
  e.candidate_key = c.spec.case_key();
  e.baseline_run = baseline.stored->run_id;
  e.candidate_run = candidate.stored->run_id;
  e.judgement = std::move(judgement);
  e.measured = {b.engine.stats.median, c.engine.stats.median,
                difference_ci(c.engine.samples_ms, b.engine.samples_ms, c.engine.stats.median - b.engine.stats.median)};
  e.reference = {b.reference.stats.median, c.reference.stats.median,
                 difference_ci(c.reference.samples_ms, b.reference.samples_ms,
                               c.reference.stats.median - b.reference.stats.median)};
  e.baseline_speedup = b.speedup;
  e.candidate_speedup = c.speedup;
  std::vector<int> all_b(bp.layers.size()), all_c(cp.layers.size());
  std::iota(all_b.begin(), all_b.end(), 0);
  std::iota(all_c.begin(), all_c.end(), 0);
  e.profiled = {bp.total_ms, cp.total_ms,
                difference_ci(per_run_sum(cp, all_c), per_run_sum(bp, all_b), cp.total_ms - bp.total_ms)};
  e.baseline_iterations = bp.iterations;
  e.candidate_iterations = cp.iterations;
  const auto against_timing = [](const Profile& p, const CaseResult& r) {
    return r.engine.stats.median > 0 ? p.total_ms / r.engine.stats.median : std::nan("");
  };
  e.baseline_profile_ratio = against_timing(bp, b);
  e.candidate_profile_ratio = against_timing(cp, c);
  e.regions = regions_of(b, bp, c, cp);
  e.modules = modules_of(bp, cp);
  e.configuration = configuration_changes(b.spec, c.spec);
  e.baseline_build_ms = b.build_ms;
  e.candidate_build_ms = c.build_ms;
  e.baseline_arena_bytes = b.engine_memory_bytes;
  e.candidate_arena_bytes = c.engine_memory_bytes;
  for (EnvField& f : environment_fields(*candidate.run, median_load({&c}), baseline.run, median_load({&b}),
                                        gpu_setups({&c}), gpu_setups({&b})))
    if (f.differs) e.environment.push_back(std::move(f));
  return e;
}

json explanation_to_json(const Explanation& e) {
  json regions = json::array();
  for (const RegionChange& r : e.regions) {
    json decisions = json::array();
    for (const DecisionChange& d : r.decisions)
      decisions.push_back({{"pass", d.pass}, {"root", d.root}, {"baseline", d.baseline}, {"candidate", d.candidate}});
    regions.push_back({{"name", r.name},
                       {"module", r.module},
                       {"shape", r.shape},
                       {"nodes", r.nodes},
                       {"baseline_layers", r.baseline_layers},
                       {"candidate_layers", r.candidate_layers},
                       {"time", time_json(r.time)},
                       {"layer_changes", r.layer_changes},
                       {"decisions", std::move(decisions)}});
  }
  json modules = json::array();
  for (const ModuleChange& m : e.modules)
    modules.push_back({{"module", m.module}, {"estimated", m.estimated}, {"time", time_json(m.time)}});
  json configuration = json::array();
  for (const FieldChange& f : e.configuration)
    configuration.push_back({{"field", f.field}, {"baseline", f.baseline}, {"candidate", f.candidate}});
  json environment = json::array();
  for (const EnvField& f : e.environment)
    environment.push_back({{"field", f.name}, {"baseline", f.baseline_value}, {"candidate", f.value}});
  json verdict = nullptr;
  if (e.judgement)
    verdict = {{"verdict", verdict_name(e.judgement->verdict)},
               {"reason", e.judgement->reason},
               {"speedup_change", number(e.judgement->speedup.change)},
               {"engine_change", number(e.judgement->engine.change)}};
  return {{"baseline", {{"run", e.baseline_run}, {"case_key", e.baseline_key}, {"label", e.baseline_label},
                        {"profile_iterations", e.baseline_iterations}}},
          {"candidate", {{"run", e.candidate_run}, {"case_key", e.candidate_key}, {"label", e.candidate_label},
                         {"profile_iterations", e.candidate_iterations}}},
          {"compare", std::move(verdict)},
          {"measured", time_json(e.measured)},
          {"reference", time_json(e.reference)},
          {"speedup", {number(e.baseline_speedup), number(e.candidate_speedup)}},
          {"profiled", time_json(e.profiled)},
          {"unexplained_ms", number(e.unexplained_ms())},
          {"profile_against_timing", {number(e.baseline_profile_ratio), number(e.candidate_profile_ratio)}},
          {"reconciled", e.reconciled()},
          {"regions", std::move(regions)},
          {"modules", std::move(modules)},
          {"configuration", std::move(configuration)},
          {"build_ms", {number(e.baseline_build_ms), number(e.candidate_build_ms)}},
          {"arena_bytes", {e.baseline_arena_bytes, e.candidate_arena_bytes}},
          {"environment", std::move(environment)}};
}

std::string explanation_text(const Explanation& e, size_t top) {
  std::string out;
  const auto line = [&](const std::string& s) { out += s + "\n"; };
  const bool same_case = e.baseline_key == e.candidate_key;
  line("explain: " + e.candidate_label + "  [" + e.candidate_key + "], run " + std::to_string(e.candidate_run) +
       " against " + (same_case ? "run " + std::to_string(e.baseline_run)
                                : e.baseline_label + "  [" + e.baseline_key + "], run " + std::to_string(e.baseline_run)));
  if (e.judgement)
    line("compare: " + std::string(verdict_name(e.judgement->verdict)) + ": " + e.judgement->reason);
  line("measured end to end (engine median): " + change_line(e.measured));
  line("speedup " + format_number("%.2fx", e.baseline_speedup) + " → " + format_number("%.2fx", e.candidate_speedup) +
       "; reference (eager, not profiled by layer): " + change_line(e.reference));
  line("profiled (sum of layer medians, " + std::to_string(e.baseline_iterations) + " and " +
       std::to_string(e.candidate_iterations) + " runs): " + change_line(e.profiled));
  line("reconciled: the layers' changes add up to " + signed_ms(e.profiled.delta_ms()) + " ms, " +
       (e.reconciled() ? "inside" : "outside") + " the measured change's interval; unexplained " +
       signed_ms(e.unexplained_ms()) + " ms (the measured change less the layers')");
  for (const std::string& c : cautions(e)) line("caution: " + c);
  line("");
  line("layers whose time changed most (change, 95% interval, ms; layers built differently first):");
  for (size_t i = 0; i < std::min(top, e.regions.size()); ++i) {
    const RegionChange& r = e.regions[i];
    const std::string layers = r.shape == "same layer" ? "" : ", " + std::to_string(r.baseline_layers.size()) + " → " +
                                                              std::to_string(r.candidate_layers.size()) + " layers";
    line("  " + signed_ms(r.time.delta_ms()) + " " + interval_text(r.time.delta_ci) + "  " + r.name + ": " + r.shape +
         layers + ", " + ms(r.time.baseline_ms) + " → " + ms(r.time.candidate_ms) + " ms");
    for (const DecisionChange& d : r.decisions)
      line("      decision: " + d.pass + " at '" + d.root + "': baseline " + d.baseline + "; candidate " + d.candidate);
    for (const std::string& c : layer_changes_shown(r)) line("      " + c);
  }
  line("");
  line("modules whose time changed most (* = includes time apportioned from fused layers; a module whose change "
       "a submodule carries is left to it):");
  for (size_t i = 0, listed = 0; i < e.modules.size() && listed < top; ++i) {
    const ModuleChange& m = e.modules[i];
    if (carried_by_child(m, e.modules)) continue;
    ++listed;
    line("  " + signed_ms(m.time.delta_ms()) + " " + interval_text(m.time.delta_ci) + "  " + m.module +
         (m.estimated ? "*" : "") + "  " + ms(m.time.baseline_ms) + " → " + ms(m.time.candidate_ms) + " ms");
  }
  line("");
  if (e.configuration.empty()) line("configuration: the same");
  for (const FieldChange& f : e.configuration) line("configuration: " + f.field + ": " + f.baseline + " → " + f.candidate);
  line("build: " + format_number("%.1f", e.baseline_build_ms) + " → " + format_number("%.1f ms", e.candidate_build_ms) +
       "; arena " + mib(e.baseline_arena_bytes) + " → " + mib(e.candidate_arena_bytes));
  if (e.environment.empty()) line("environment: no differences");
  for (const EnvField& f : e.environment) line("environment: " + f.name + ": " + f.baseline_value + " → " + f.value);
  return out;
}

}  // namespace fb
