#include "engine/runtime/profiler.h"

#include <algorithm>
#include <map>

namespace fb {

namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Each layer's time in each of `iterations` runs (one warm-up run first).
std::vector<std::vector<double>> layer_samples(Engine& engine, const std::vector<Tensor>& inputs, int iterations) {
  std::vector<std::vector<double>> per_layer(engine.layers().size());
  std::vector<double> ms;
  engine.run(inputs);
  for (int it = 0; it < iterations; ++it) {
    engine.run(inputs, &ms);
    for (size_t i = 0; i < ms.size(); ++i) per_layer[i].push_back(ms[i]);
  }
  return per_layer;
}

std::vector<double> medians(const std::vector<std::vector<double>>& per_layer) {
  std::vector<double> med;
  for (const auto& v : per_layer) med.push_back(median_of(v));
  return med;
}


}  // namespace

std::string module_of(const std::string& node_name) {
  const size_t slash = node_name.rfind('/');
  return slash == std::string::npos || slash == 0 ? (slash == 0 ? "/" : "") : node_name.substr(0, slash + 1);
}

Profile profile_engine(Engine& engine, Engine* unfused, const std::vector<Tensor>& inputs, int iterations) {
  Profile p;
  p.iterations = iterations;
  std::vector<std::vector<double>> samples = layer_samples(engine, inputs, iterations);
  const std::vector<double> med = medians(samples);
  // Unfused node times: the weights for apportioning fused layers.
  std::map<std::string, double> node_weight;
  if (unfused) {
    const std::vector<double> um = medians(layer_samples(*unfused, inputs, iterations));
    for (size_t i = 0; i < um.size(); ++i)
      for (const std::string& s : unfused->layers()[i].sources) node_weight[s] += um[i];
  }
  for (size_t i = 0; i < engine.layers().size(); ++i) {
    const LayerInfo& l = engine.layers()[i];
    LayerProfile lp{int(i), l.name, l.kind, l.kernel, med[i], l.flops, l.bytes, l.sources, l.eager, std::move(samples[i])};
    p.total_ms += med[i];
    p.layers.push_back(lp);
    const bool fused = l.sources.size() > 1;
    double weight_sum = 0;
    for (const std::string& s : l.sources) weight_sum += node_weight.count(s) ? node_weight[s] : 0;
    for (const std::string& s : l.sources) {
      NodeProfile np{s, module_of(s), int(i), 0, fused};
      if (!fused) np.ms = med[i];
      else if (weight_sum > 0) np.ms = med[i] * node_weight[s] / weight_sum;
      else np.ms = med[i] / double(l.sources.size());  // no unfused run: split evenly
      p.nodes.push_back(np);
    }
  }
  p.modules = roll_up_modules(p.nodes, p.total_ms);
  return p;
}

std::vector<ModuleProfile> roll_up_modules(const std::vector<NodeProfile>& nodes, double total_ms) {
  std::map<std::string, ModuleProfile> mods;
  for (const NodeProfile& n : nodes) {
    const std::string& m = n.module.empty() ? std::string("(no module)") : n.module;
    for (size_t pos = 0; (pos = m.find('/', pos)) != std::string::npos; ++pos) {
      ModuleProfile& mp = mods[m.substr(0, pos + 1)];
      mp.module = m.substr(0, pos + 1);
      mp.ms += n.ms;
      mp.estimated = mp.estimated || n.estimated;
    }
    if (n.module.empty()) {
      ModuleProfile& mp = mods[m];
      mp.module = m;
      mp.ms += n.ms;
      mp.estimated = mp.estimated || n.estimated;
    }
  }
  std::vector<ModuleProfile> out;
  for (auto& [k, m] : mods) {
    m.share = total_ms > 0 ? m.ms / total_ms : 0;
    out.push_back(m);
  }
  return out;
}

}  // namespace fb
