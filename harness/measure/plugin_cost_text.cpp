#include "harness/measure/plugin_cost_text.h"

#include <cstdio>

namespace fb {

namespace {
std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}
}  // namespace

std::string format_plugin_cost(const PluginCost& c, const std::string& in, bool list_layers) {
  std::string s = in + "plugin cost: " + fmt("%+.3f ms [%+.3f, %+.3f]", c.difference_ms, c.difference_ci_low, c.difference_ci_high) +
                  fmt(" (with %.3f ms, without %.3f ms", c.with_ms, c.without_ms) + ", " + std::to_string(c.samples) +
                  " samples each, " + c.stop_reason + ")\n";
  s += in + fmt("  (a) plugins' own time  %+9.3f ms", c.plugin_ms);
  for (const CostLayer& l : c.plugin_layers) s += "  " + l.kind + " '" + l.name + "'" + fmt(" %.3f ms", l.ms);
  s += "\n" + in + fmt("  (b) prevented fusions  %+9.3f ms", c.fusion_ms) + " in " + std::to_string(c.prevented.size()) +
       " group(s)\n";
  for (const PreventedFusion& f : c.prevented) {
    s += in + "        " + f.name + fmt(": %.3f ms in %.0f layer(s) -> ", f.before_ms, double(f.before.size())) +
         fmt("%.3f ms in %.0f layer(s)", f.after_ms, double(f.after.size())) + fmt(" (%+.3f ms)\n", f.delta_ms());
    if (!list_layers) continue;
    for (const CostLayer& l : f.before) s += in + "          before  " + fmt("%8.4f ms  ", l.ms) + l.kind + " '" + l.name + "'\n";
    for (const CostLayer& l : f.after) s += in + "          after   " + fmt("%8.4f ms  ", l.ms) + l.kind + " '" + l.name + "'\n";
  }
  s += in + fmt("  (c) the rest           %+9.3f ms", c.rest_ms) + " (layers in both builds)\n";
  s += in + fmt("  a + b + c = %+.3f ms, ", c.plugin_ms + c.fusion_ms + c.rest_ms) +
       (c.within_interval ? "within" : "outside") + " the difference's interval" + fmt(" (unattributed %+.3f ms)\n", c.unattributed_ms);
  return s;
}

}  // namespace fb
