// A plugin cost split as text, the same in `run`, `profile` and `inspect --db`.
#pragma once
#include <string>

#include "harness/cases/plugin_cost_result.h"

namespace fb {

// Several lines, each ending in '\n', indented by `indent`:
//   plugin cost: +2.113 ms [+1.981, +2.240] (with 5.102 ms, without 2.989 ms)
//     (a) plugins' own time     0.004 ms  fusebench.plugin.Copy 'noop'
//     (b) prevented fusions    +2.087 ms
//           fusebench.Attention '/encoder/layer.0/attention/self/MatMul' (13 nodes): 0.412 ms -> 2.499 ms in 9 layers
//     (c) the rest             +0.019 ms
//     a + b + c = +2.110 ms, within the interval (unattributed +0.003 ms)
std::string format_plugin_cost(const PluginCost& c, const std::string& indent = "  ", bool list_layers = false);

}  // namespace fb
