#include "harness/measure/plugin_cost.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <numeric>
#include <set>

#include "engine/runtime/plugin_layer.h"
#include "harness/measure/timer.h"
#include "harness/stats/bootstrap.h"
#include "harness/stats/statistics.h"

namespace fb {

namespace {

// Union-find over the layers of both builds: baseline layer i is node i, plugin-build
// layer j is node nb + j.
struct Groups {
  std::vector<size_t> parent;
  explicit Groups(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  size_t find(size_t k) {
    while (parent[k] != k) k = parent[k] = parent[parent[k]];
    return k;
  }
  void join(size_t a, size_t b) { parent[find(a)] = find(b); }
};

std::string layer_title(const LayerInfo& l) {
  return l.kind + " '" + l.name + "'" + (l.sources.size() > 1 ? " (" + std::to_string(l.sources.size()) + " nodes)" : "");
}

}  // namespace

PluginCost split_plugin_cost(const std::vector<LayerInfo>& with_layers, const std::vector<double>& with_ms,
                             const std::vector<bool>& is_plugin, const std::vector<LayerInfo>& without_layers,
                             const std::vector<double>& without_ms) {
  const size_t nb = without_layers.size(), nw = with_layers.size();
  Groups groups(nb + nw);
  std::map<std::string, size_t> baseline_of;  // source node -> baseline layer
  for (size_t i = 0; i < nb; ++i)
    for (const std::string& s : without_layers[i].sources) baseline_of[s] = i;
  for (size_t j = 0; j < nw; ++j)
    for (const std::string& s : with_layers[j].sources) {
      auto it = baseline_of.find(s);
      if (it != baseline_of.end()) groups.join(it->second, nb + j);
    }
  std::map<size_t, std::pair<std::vector<size_t>, std::vector<size_t>>> members;  // root -> (baseline, plugin build)
  for (size_t i = 0; i < nb; ++i) members[groups.find(i)].first.push_back(i);
  for (size_t j = 0; j < nw; ++j) members[groups.find(nb + j)].second.push_back(j);

  PluginCost c;
  for (const auto& [_, m] : members) {
    const auto& [before, after] = m;
    PreventedFusion f;
    for (size_t j : after) {
      const LayerInfo& l = with_layers[j];
      if (is_plugin[j]) {
        c.plugin_layers.push_back(CostLayer{l.name, l.kind, with_ms[j]});
        c.plugin_ms += with_ms[j];
      } else {
        f.after.push_back(CostLayer{l.name, l.kind, with_ms[j]});
        f.after_ms += with_ms[j];
      }
    }
    for (size_t i : before) {
      f.before.push_back(CostLayer{without_layers[i].name, without_layers[i].kind, without_ms[i]});
      f.before_ms += without_ms[i];
    }
    const bool unchanged = before.size() == 1 && f.after.size() == 1 && after.size() == 1 &&
                           without_layers[before[0]].sources == with_layers[after[0]].sources;
    if (unchanged) {
      c.rest_ms += f.delta_ms();
    } else if (!before.empty() || !f.after.empty()) {
      // Name the group by its largest fused baseline layer (most sources).
      size_t named = before.empty() ? 0 : before[0];
      for (size_t i : before)
        if (without_layers[i].sources.size() > without_layers[named].sources.size()) named = i;
      f.name = before.empty() ? layer_title(with_layers[after[0]]) : layer_title(without_layers[named]);
      c.fusion_ms += f.delta_ms();
      c.prevented.push_back(std::move(f));
    }
  }
  std::sort(c.prevented.begin(), c.prevented.end(),
            [](const PreventedFusion& a, const PreventedFusion& b) { return a.delta_ms() > b.delta_ms(); });
  return c;
}

std::vector<bool> plugin_owned_layers(const std::vector<LayerInfo>& layers) {
  std::set<std::string> plugin_sources;
  for (const LayerInfo& l : layers)
    if (is_plugin_layer(l)) plugin_sources.insert(l.sources.begin(), l.sources.end());
  std::vector<bool> owned;
  for (const LayerInfo& l : layers) {
    const bool copy = l.kind == "fusebench.CopyToHost" || l.kind == "fusebench.CopyToDevice";
    owned.push_back(is_plugin_layer(l) || (copy && !l.sources.empty() &&
                                           std::all_of(l.sources.begin(), l.sources.end(),
                                                       [&](const std::string& s) { return plugin_sources.count(s) != 0; })));
  }
  return owned;
}

PluginCost measure_plugin_cost(Engine& with, Engine& without, const std::vector<Tensor>& inputs,
                               const TimingConfig& timing) {
  // End to end: the harness's interleaved timer, plugin build in the "engine" seat.
  TimingConfig t = timing;
  t.clear_injection();  // the test hook slows "the engine"; here both seats are engines
  SideBySide e2e = time_side_by_side([&] { with.run(inputs); }, [&] { without.run(inputs); }, t, 1);
  // Layer by layer: interleaved profiled runs, as many as the end-to-end timing kept
  // (at least 20), within the same time cap.
  const int runs = std::max<int>(20, int(e2e.engine.samples_ms.size()));
  std::vector<std::vector<double>> with_samples(with.layers().size()), without_samples(without.layers().size());
  std::vector<double> ms;
  const auto t0 = std::chrono::steady_clock::now();
  int done = 0;
  for (; done < runs; ++done) {
    with.run(inputs, &ms);
    for (size_t i = 0; i < ms.size(); ++i) with_samples[i].push_back(ms[i]);
    without.run(inputs, &ms);
    for (size_t i = 0; i < ms.size(); ++i) without_samples[i].push_back(ms[i]);
    if (done >= 20 && std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timing.max_seconds) break;
  }
  auto medians = [](const std::vector<std::vector<double>>& s) {
    std::vector<double> m;
    for (const auto& v : s) m.push_back(percentile(v, 0.5));
    return m;
  };
  PluginCost c = split_plugin_cost(with.layers(), medians(with_samples), plugin_owned_layers(with.layers()), without.layers(),
                                   medians(without_samples));
  c.with_ms = e2e.engine.stats.median;
  c.without_ms = e2e.reference.stats.median;
  c.difference_ms = c.with_ms - c.without_ms;
  const Interval ci = bootstrap_difference_ci(e2e.engine.samples_ms, e2e.reference.samples_ms);
  c.difference_ci_low = ci.low;
  c.difference_ci_high = ci.high;
  c.samples = int(e2e.engine.samples_ms.size());
  c.layer_runs = done;
  c.stop_reason = e2e.stop_reason;
  const double parts = c.plugin_ms + c.fusion_ms + c.rest_ms;
  c.unattributed_ms = c.difference_ms - parts;
  c.within_interval = parts >= ci.low && parts <= ci.high;
  return c;
}

}  // namespace fb
