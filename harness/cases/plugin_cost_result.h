// The result of a plugin cost analysis, as stored with a case (harness/measure/plugin_cost.h
// measures it; the store keeps it in plugin_costs and plugin_cost_groups).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fb {

struct CostLayer {
  std::string name, kind;
  double ms = 0;  // median over the profiled runs
  bool operator==(const CostLayer&) const = default;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CostLayer, name, kind, ms)

// One group of layers that differs between the builds.
struct PreventedFusion {
  std::string name;               // the baseline's fused layer: "fusebench.Attention '/encoder/...'"
  std::vector<CostLayer> before;  // baseline layers
  std::vector<CostLayer> after;   // the plugin build's layers (the plugins' own not included)
  double before_ms = 0, after_ms = 0;
  double delta_ms() const { return after_ms - before_ms; }
  bool operator==(const PreventedFusion&) const = default;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PreventedFusion, name, before, after, before_ms, after_ms)

struct PluginCost {
  double with_ms = 0, without_ms = 0;  // end-to-end medians, interleaved
  double difference_ms = 0;            // with - without
  double difference_ci_low = 0, difference_ci_high = 0;  // its 95% seeded bootstrap interval
  int samples = 0;                     // end-to-end samples per build
  int layer_runs = 0;                  // profiled runs per build
  double plugin_ms = 0;                // (a)
  std::vector<CostLayer> plugin_layers;
  double fusion_ms = 0;                // (b): sum of prevented[i].delta_ms()
  std::vector<PreventedFusion> prevented;
  double rest_ms = 0;                  // (c)
  double unattributed_ms = 0;          // difference - (a + b + c)
  bool within_interval = false;        // a + b + c lies in [difference_ci_low, difference_ci_high]
  std::string stop_reason;             // of the end-to-end timing
  bool operator==(const PluginCost&) const = default;
};
// How a worker process hands the analysis to its parent (harness/cases/case_json.cpp).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PluginCost, with_ms, without_ms, difference_ms, difference_ci_low, difference_ci_high,
                                   samples, layer_runs, plugin_ms, plugin_layers, fusion_ms, prevented, rest_ms,
                                   unattributed_ms, within_interval, stop_reason)

}  // namespace fb
