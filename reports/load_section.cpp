#include "reports/load_section.h"

#include <cmath>

#include "harness/util/format_number.h"
#include "reports/html_report.h"
#include "reports/svg_charts.h"

namespace fb {

std::string load_section_html(const CaseResult& r) {
  const LoadResult& load = *r.load;
  const std::string pct = "p" + format_number("%g", 100 * reported_step(load).figures.percentile);
  std::string o = "<h4>Load: " + html_escape(r.spec.load.scenario) + ", " + std::to_string(r.spec.load.instances) +
                  " instance(s) of " + std::to_string(r.spec.threads) + " thread(s)</h4>\n";
  if (r.spec.load.peak_search)
    o += "<p>Peak search: " + (std::isnan(load.peak_qps) ? std::string("no rate tried was valid")
                                                         : "highest valid rate " + format_number("%g", load.peak_qps) + " qps") +
         " (" + std::to_string(load.steps.size()) + " steps, each a full run)</p>\n";

  // Latency against rate: the rate asked for (server) or reached, one point per step.
  svg::LineSeries p50{"p50", "#0969da", {}, {}, {}, {}, {}, {}}, p99{"p99", "#bc4c00", {}, {}, {}, {}, {}, {}},
      claimed{"claimed " + pct, "#8250df", {}, {}, {}, {}, {}, {}};
  for (const LoadStep& s : load.steps) {
    const LoadFigures& f = s.figures;
    const double x = f.target_qps > 0 ? f.target_qps : f.qps;
    const std::string tip = format_number("%g qps: ", x) + (f.valid ? "valid" : "invalid: " + f.invalid);
    for (auto [series, y] : {std::pair{&p50, f.p50_ms}, {&p99, f.p99_ms}, {&claimed, f.claimed_ms}}) {
      if (std::isnan(y)) continue;
      series->x.push_back(x);
      series->y.push_back(y);
      series->tips.push_back(tip);
      series->highlight.push_back(f.valid);
    }
  }
  svg::LineChartSpec spec;
  spec.aria = "query latency against the rate of arrivals";
  spec.x_label = "queries per second";
  spec.y_label = "ms per query";
  if (r.spec.load.scenario == "server") {
    spec.y_rule = r.spec.load.latency_bound_ms;
    spec.y_rule_label = "bound " + format_number("%g ms", r.spec.load.latency_bound_ms);
  }
  o += "<figure>" + svg::line_chart(spec, {p50, p99, claimed}) +
       "<figcaption>Latency against rate: each point a run (larger: valid); the claimed percentile is early "
       "stopping's estimate at 99% confidence.</figcaption></figure>\n";

  std::vector<svg::Box> boxes;
  for (size_t k = 0; k < load.steps.size(); ++k) {
    const LoadFigures& f = load.steps[k].figures;
    boxes.push_back({format_number("%g qps", f.target_qps > 0 ? f.target_qps : f.qps) + (f.valid ? "" : " (invalid)"),
                     f.valid ? "#0969da" : "#cf222e", query_latencies_ms(load.steps[k].samples)});
  }
  o += "<figure>" + svg::box_plot("per-query latency distribution of each load run", boxes, "ms per query") +
       "<figcaption>Every query of every run, from its issue to its end.</figcaption></figure>\n";

  o += "<table class=\"data\"><thead><tr><th>rate asked</th><th>qps</th><th>queries</th><th>p50 ms</th><th>p90 ms</th>"
       "<th>p99 ms</th><th>claimed " + pct + " ms</th><th>over bound</th><th>valid</th></tr></thead><tbody>\n";
  for (const LoadStep& s : load.steps) {
    const LoadFigures& f = s.figures;
    o += "<tr><td>" + (f.target_qps > 0 ? format_number("%g", f.target_qps) : std::string("-")) + "</td><td>" +
         format_number("%.1f", f.qps) + "</td><td>" + std::to_string(f.queries) + "</td><td>" + format_number("%.3f", f.p50_ms) +
         "</td><td>" + format_number("%.3f", f.p90_ms) + "</td><td>" + format_number("%.3f", f.p99_ms) + "</td><td>" +
         (std::isnan(f.claimed_ms) ? std::string("-") : format_number("%.3f", f.claimed_ms)) + "</td><td>" +
         std::to_string(f.over_bound) + "</td><td>" + (f.valid ? "yes" : "<b>no</b>: " + html_escape(f.invalid)) + "</td></tr>\n";
  }
  o += "</tbody></table>\n<p class=\"muted\">The loop's own cost: " + format_number("%.0f", reported_step(load).figures.overhead_ns) +
       " ns per query.</p>\n";
  return o;
}

}  // namespace fb
