// What a plugin really costs (DESIGN.md problem 5). A case with plugins is also built
// without them; both engines are timed interleaved, end to end and layer by layer, and
// the end-to-end difference is split into
//   (a) the plugins' own time: their layers (in a GPU build, where a plugin runs on the
//       CPU, with the copies between the two memories around it),
//   (b) the fusions they prevented (or the layers they replaced): each group of layers
//       that differs between the two builds, with the time before (baseline layers) and
//       after (the layers it was split into),
//   (c) the rest: layers present in both builds whose time changed (extra copies, layout
//       reorders, lost in-place reuse).
// Groups come from provenance: two layers belong together when they share a source ONNX
// node, so a fused layer of the baseline and the pieces it became in the plugin build
// fall into one group. The parts are per-layer medians, the difference an end-to-end
// one; `unattributed_ms` is what they fail to explain and `within_interval` whether
// a + b + c lies in the difference's 95% interval.
#pragma once
#include <string>
#include <vector>

#include "engine/runtime/engine.h"
#include "harness/cases/case.h"
#include "harness/cases/plugin_cost_result.h"

namespace fb {

// The split from two builds' layers and their per-layer medians (same order as layers()).
// `is_plugin` says which of the plugin build's layers are plugins. Fills a, b, c only.
PluginCost split_plugin_cost(const std::vector<LayerInfo>& with_layers, const std::vector<double>& with_ms,
                             const std::vector<bool>& is_plugin, const std::vector<LayerInfo>& without_layers,
                             const std::vector<double>& without_ms);

// Times both engines on the same inputs (on the caller's threads) and splits the
// difference. `with` has the plugins, `without` not.
// Per layer: whether it is a plugin's own: a plugin layer, or in a GPU build a copy between
// the device and the CPU that device placement made for one (credited to its node).
std::vector<bool> plugin_owned_layers(const std::vector<LayerInfo>& layers);

PluginCost measure_plugin_cost(Engine& with, Engine& without, const std::vector<Tensor>& inputs,
                               const TimingConfig& timing);

}  // namespace fb
