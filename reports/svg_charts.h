// Charts the report writes as inline SVG (no chart library, no script): line charts with
// interval whiskers, box plots of sample distributions, and an icicle of the module
// roll-up. Presentation attributes only, so a chart also reads when copied out on its own;
// every label goes through html_escape; sized by viewBox, so they scale with the page.
// The history charts, which need hover over hundreds of points, are drawn by the page's
// script instead (reports/assets/report.js) from the same kind of axes.
#pragma once
#include <string>
#include <vector>

#include "engine/runtime/profiler.h"
#include "harness/judge/explain.h"

namespace fb::svg {

// About `target` round tick values covering [lo, hi] (steps of 1, 2 or 5 × 10^k).
std::vector<double> nice_ticks(double lo, double hi, int target);

struct LineSeries {
  std::string name, color;
  std::vector<double> x, y, low, high;  // low/high: the interval per point (empty: none)
  std::vector<std::string> tips;        // hover text per point (plain text; escaped here)
  std::vector<bool> highlight;          // points drawn larger (may be empty)
};

struct LineChartSpec {
  std::string aria;          // what the chart shows, for screen readers
  std::string x_label, y_label;
  bool x_log2 = false;       // batch sizes: 1, 2, 4, 8 evenly spaced
  double y_rule = 0;         // a dashed horizontal rule at this y (1.0 for speedups); 0: none
  std::string y_rule_label;
};
std::string line_chart(const LineChartSpec& spec, const std::vector<LineSeries>& series);

struct Box {
  std::string label, color;
  std::vector<double> samples;
};
// One horizontal box per entry (quartiles, median, whiskers at the furthest samples within
// 1.5 IQR; the outlier count in the label), on one shared axis in `unit`.
std::string box_plot(const std::string& aria, const std::vector<Box>& boxes, const std::string& unit);

// The module roll-up as an icicle: one row per module depth, widths in proportion to time;
// modules whose time was apportioned from fused layers are hatched and marked "est.".
std::string icicle(const std::vector<ModuleProfile>& modules, double total_ms, int max_depth = 7);

// The change between two profiles by module (`fusebench explain`'s): the same icicle, each
// module as wide as the larger of its two times, red where it got slower and green where
// faster (deeper the larger the change), its change and interval in the hover text.
std::string differential_icicle(const std::vector<ModuleChange>& modules, int max_depth = 7);

}  // namespace fb::svg
