#include "reports/svg_charts.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "harness/stats/statistics.h"
#include "harness/util/format_number.h"
#include "reports/html_report.h"

namespace fb::svg {
namespace {

std::string num(double v, const char* f = "%.1f") { return format_number(f, v); }

// A tick's label: as few digits as the step needs.
std::string tick_label(double v, double step) {
  const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  return fixed(v, std::min(decimals, 6));
}

const char* const kFont =
    " font-family=\"system-ui, -apple-system, 'Segoe UI', Roboto, Arial, sans-serif\" font-size=\"12\" fill=\"#1f2328\"";

std::string open_svg(int w, int h, const std::string& aria) {
  return "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(w) + "\" height=\"" +
         std::to_string(h) + "\" viewBox=\"0 0 " + std::to_string(w) + " " + std::to_string(h) +
         "\" role=\"img\" aria-label=\"" + html_escape(aria) + "\"" + kFont + ">\n";
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag * 1.0000001) {
      step = m * mag;
      break;
    }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step)
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0 : t);
  return ticks;
}

std::string line_chart(const LineChartSpec& spec, const std::vector<LineSeries>& series) {
  const int w = 620, h = 250, left = 62, right = 170, top = 14, bottom = 46;
  const int pw = w - left - right, ph = h - top - bottom;
  std::set<double> xs;
  double ymax = spec.y_rule;
  for (const LineSeries& s : series) {
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.y[i])) continue;
      xs.insert(s.x[i]);
      ymax = std::max(ymax, s.y[i]);
      if (i < s.high.size() && std::isfinite(s.high[i])) ymax = std::max(ymax, s.high[i]);
    }
  }
  const auto xt = [&](double x) { return spec.x_log2 ? std::log2(std::max(x, 1e-12)) : x; };
  double x0 = xs.empty() ? 0 : xt(*xs.begin()), x1 = xs.empty() ? 1 : xt(*xs.rbegin());
  if (x1 - x0 < 1e-12) x0 -= 0.5, x1 += 0.5;
  if (!(ymax > 0)) ymax = 1;
  const std::vector<double> yticks = nice_ticks(0, ymax * 1.08, 5);
  const double ytop = std::max(yticks.back(), ymax);
  const double step = yticks.size() > 1 ? yticks[1] - yticks[0] : ytop;
  const auto px = [&](double x) { return left + 12 + (xt(x) - x0) / (x1 - x0) * (pw - 24); };
  const auto py = [&](double y) { return top + ph - y / ytop * ph; };

  std::ostringstream o;
  o << open_svg(w, h, spec.aria);
  for (double t : yticks) {
    o << "<line stroke=\"#eaeef2\" x1=\"" << left << "\" x2=\"" << left + pw << "\" y1=\"" << num(py(t)) << "\" y2=\""
      << num(py(t)) << "\"/><text x=\"" << left - 6 << "\" y=\"" << num(py(t) + 4) << "\" text-anchor=\"end\">"
      << tick_label(t, step) << "</text>\n";
  }
  for (double x : xs)
    o << "<text x=\"" << num(px(x)) << "\" y=\"" << top + ph + 16 << "\" text-anchor=\"middle\">" << num(x, "%g")
      << "</text>\n";
  o << "<line stroke=\"#656d76\" x1=\"" << left << "\" x2=\"" << left << "\" y1=\"" << top << "\" y2=\"" << top + ph
    << "\"/><line stroke=\"#656d76\" x1=\"" << left << "\" x2=\"" << left + pw << "\" y1=\"" << top + ph << "\" y2=\""
    << top + ph << "\"/>\n";
  o << "<text x=\"" << left + pw / 2 << "\" y=\"" << h - 8 << "\" text-anchor=\"middle\" fill=\"#656d76\">"
    << html_escape(spec.x_label) << "</text>\n";
  o << "<text transform=\"translate(14 " << top + ph / 2 << ") rotate(-90)\" text-anchor=\"middle\" fill=\"#656d76\">"
    << html_escape(spec.y_label) << "</text>\n";
  if (spec.y_rule > 0) {
    o << "<line stroke=\"#cf222e\" stroke-dasharray=\"4 3\" x1=\"" << left << "\" x2=\"" << left + pw << "\" y1=\""
      << num(py(spec.y_rule)) << "\" y2=\"" << num(py(spec.y_rule)) << "\"/><text x=\"" << left + pw - 4 << "\" y=\""
      << num(py(spec.y_rule) - 4) << "\" text-anchor=\"end\" fill=\"#cf222e\">" << html_escape(spec.y_rule_label)
      << "</text>\n";
  }
  for (size_t k = 0; k < series.size(); ++k) {
    const LineSeries& s = series[k];
    const std::string color = html_escape(s.color);
    std::string points;
    for (size_t i = 0; i < s.x.size(); ++i)
      if (std::isfinite(s.y[i])) points += num(px(s.x[i])) + "," + num(py(s.y[i])) + " ";
    o << "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" << color << "\" points=\"" << points << "\"/>\n";
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.y[i])) continue;
      const double x = px(s.x[i]);
      if (i < s.low.size() && std::isfinite(s.low[i]) && std::isfinite(s.high[i]) && s.high[i] > s.low[i]) {
        o << "<path stroke=\"" << color << "\" d=\"M" << num(x) << " " << num(py(s.low[i])) << "V" << num(py(s.high[i]))
          << "M" << num(x - 4) << " " << num(py(s.low[i])) << "h8M" << num(x - 4) << " " << num(py(s.high[i]))
          << "h8\"/>";
      }
      const bool big = i < s.highlight.size() && s.highlight[i];
      o << "<circle cx=\"" << num(x) << "\" cy=\"" << num(py(s.y[i])) << "\" r=\"" << (big ? 6 : 4) << "\" fill=\""
        << (big ? "#fff" : color) << "\" stroke=\"" << color << "\" stroke-width=\"" << (big ? 3 : 1) << "\">";
      if (i < s.tips.size()) o << "<title>" << html_escape(s.tips[i]) << "</title>";
      o << "</circle>\n";
    }
    // Legend, right of the plot.
    const int ly = top + 8 + 18 * static_cast<int>(k);
    o << "<rect x=\"" << left + pw + 14 << "\" y=\"" << ly - 8 << "\" width=\"12\" height=\"10\" fill=\"" << color
      << "\"/><text x=\"" << left + pw + 32 << "\" y=\"" << ly + 1 << "\">" << html_escape(s.name) << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

std::string box_plot(const std::string& aria, const std::vector<Box>& boxes, const std::string& unit) {
  struct Five {
    double lo, q1, med, q3, hi;
    int outliers;
  };
  std::vector<Five> fives;
  double xmin = INFINITY, xmax = -INFINITY;
  for (const Box& b : boxes) {
    std::vector<double> s = b.samples;
    std::sort(s.begin(), s.end());
    if (s.empty()) {
      fives.push_back({NAN, NAN, NAN, NAN, NAN, 0});
      continue;
    }
    const double q1 = percentile(s, 0.25), q3 = percentile(s, 0.75), fence = 1.5 * (q3 - q1);
    const auto lo = std::lower_bound(s.begin(), s.end(), q1 - fence);
    const auto hi = std::upper_bound(s.begin(), s.end(), q3 + fence);
    Five f{*lo, q1, percentile(s, 0.5), q3, *(hi - 1), static_cast<int>((lo - s.begin()) + (s.end() - hi))};
    xmin = std::min(xmin, f.lo);
    xmax = std::max(xmax, f.hi);
    fives.push_back(f);
  }
  const int w = 620, label_w = 210, right = 20, row = 34, top = 8, axis = 40;
  const int h = top + row * static_cast<int>(boxes.size()) + axis;
  if (!std::isfinite(xmin)) xmin = 0, xmax = 1;
  const double pad = std::max((xmax - xmin) * 0.05, xmax * 1e-3);
  const std::vector<double> ticks = nice_ticks(std::max(0.0, xmin - pad), xmax + pad, 6);
  const double a = std::min(ticks.front(), xmin), b = std::max(ticks.back(), xmax);
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : b - a;
  const int pw = w - label_w - right;
  const auto px = [&](double v) { return label_w + (v - a) / (b - a) * pw; };
  std::ostringstream o;
  o << open_svg(w, h, aria);
  const int ay = top + row * static_cast<int>(boxes.size());
  for (double t : ticks) {
    if (t < a || t > b) continue;
    o << "<line stroke=\"#eaeef2\" x1=\"" << num(px(t)) << "\" x2=\"" << num(px(t)) << "\" y1=\"" << top << "\" y2=\"" << ay
      << "\"/><text x=\"" << num(px(t)) << "\" y=\"" << ay + 15 << "\" text-anchor=\"middle\">" << tick_label(t, step)
      << "</text>\n";
  }
  o << "<text x=\"" << label_w + pw / 2 << "\" y=\"" << h - 6 << "\" text-anchor=\"middle\" fill=\"#656d76\">"
    << html_escape(unit) << "</text>\n";
  for (size_t k = 0; k < boxes.size(); ++k) {
    const Five& f = fives[k];
    const int y = top + row * static_cast<int>(k), mid = y + row / 2;
    o << "<text x=\"" << label_w - 8 << "\" y=\"" << mid + 4 << "\" text-anchor=\"end\">" << html_escape(boxes[k].label);
    if (f.outliers) o << " <tspan fill=\"#656d76\">(" << f.outliers << " outliers)</tspan>";
    o << "</text>\n";
    if (!std::isfinite(f.med)) {
      o << "<text x=\"" << label_w + 4 << "\" y=\"" << mid + 4 << "\" fill=\"#656d76\">no samples</text>\n";
      continue;
    }
    const std::string c = html_escape(boxes[k].color);
    o << "<g stroke=\"" << c << "\"><title>" << html_escape(boxes[k].label) << ": median " << num(f.med, "%.4g") << ", quartiles "
      << num(f.q1, "%.4g") << "–" << num(f.q3, "%.4g") << ", whiskers " << num(f.lo, "%.4g") << "–" << num(f.hi, "%.4g")
      << " " << html_escape(unit) << " (" << boxes[k].samples.size() << " samples)</title>"
      << "<path d=\"M" << num(px(f.lo)) << " " << mid << "H" << num(px(f.q1)) << "M" << num(px(f.q3)) << " " << mid << "H"
      << num(px(f.hi)) << "M" << num(px(f.lo)) << " " << mid - 6 << "v12M" << num(px(f.hi)) << " " << mid - 6
      << "v12\"/><rect x=\"" << num(px(f.q1)) << "\" y=\"" << y + 6 << "\" width=\""
      << num(std::max(1.0, px(f.q3) - px(f.q1))) << "\" height=\"" << row - 12 << "\" fill=\"" << c
      << "\" fill-opacity=\"0.25\"/><path stroke-width=\"3\" d=\"M" << num(px(f.med)) << " " << y + 6 << "v" << row - 12
      << "\"/></g>\n";
  }
  o << "</svg>\n";
  return o.str();
}

namespace {

// One module of an icicle: its path ("/encoder/layer.0/"), its width in ms, how it is drawn,
// its label (a short form where the full one does not fit) and its hover text.
struct IcicleCell {
  std::string path;
  double ms = 0;
  std::string fill, label, short_label, title;
};

// Lays the cells out by path depth, each inside its parent, widths in proportion to ms of
// `total_ms`; `defs` holds the fills' patterns.
std::string draw_icicle(std::vector<IcicleCell> cells, double total_ms, int max_depth, const std::string& aria,
                        const std::string& defs) {
  // Sorted paths list a module before everything inside it, so one pass lays it out: each
  // module starts where its parent's next child goes.
  std::sort(cells.begin(), cells.end(), [](const IcicleCell& a, const IcicleCell& b) { return a.path < b.path; });
  const auto depth_of = [](const std::string& p) { return std::max(0, int(std::count(p.begin(), p.end(), '/')) - 1); };
  const int w = 1000, row = 24;
  int depth = 0;
  for (const IcicleCell& c : cells) depth = std::max(depth, std::min(depth_of(c.path), max_depth - 1));
  const int h = row * (depth + 1) + 4;
  std::ostringstream o;
  o << open_svg(w, h, aria) << defs;
  std::map<std::string, double> next_x;  // parent path → where its next child starts
  double root_x = 0;
  const double scale = total_ms > 0 ? w / total_ms : 0;
  for (const IcicleCell& c : cells) {
    const std::string& p = c.path;
    const int d = depth_of(p);
    // The parent: the longest proper prefix that ends in '/' and is itself a module.
    double x = root_x;
    std::string parent;
    for (size_t cut = p.size() >= 2 ? p.rfind('/', p.size() - 2) : std::string::npos; cut != std::string::npos;
         cut = cut > 0 ? p.rfind('/', cut - 1) : std::string::npos) {
      if (next_x.count(p.substr(0, cut + 1))) {
        parent = p.substr(0, cut + 1);
        break;
      }
    }
    if (!parent.empty()) x = next_x[parent];
    const double width = c.ms * scale;
    if (!parent.empty()) next_x[parent] += width;
    else root_x += width;
    next_x[p] = x;
    if (d >= max_depth || width < 0.5) continue;
    o << "<g><title>" << html_escape(c.title) << "</title><rect x=\"" << num(x) << "\" y=\"" << d * row << "\" width=\""
      << num(std::max(0.5, width - 1)) << "\" height=\"" << row - 2 << "\" fill=\"" << c.fill << "\" stroke=\"#54aeff\"/>";
    if (width > 7.0 * static_cast<double>(c.label.size()))
      o << "<text x=\"" << num(x + 4) << "\" y=\"" << d * row + 16 << "\">" << html_escape(c.label) << "</text>";
    else if (width > 40)
      o << "<text x=\"" << num(x + 4) << "\" y=\"" << d * row + 16 << "\">" << html_escape(c.short_label) << "</text>";
    o << "</g>\n";
  }
  o << "</svg>\n";
  return o.str();
}

// "/encoder/layer.0/" → "layer.0/"
std::string last_part(const std::string& path) {
  if (path.size() <= 1 || path.back() != '/') return path;
  const size_t cut = path.rfind('/', path.size() - 2);
  return path.substr(cut == std::string::npos ? 0 : cut + 1);
}

}  // namespace

std::string icicle(const std::vector<ModuleProfile>& modules, double total_ms, int max_depth) {
  std::vector<IcicleCell> cells;
  for (const ModuleProfile& m : modules) {
    const std::string share = num(100 * m.share, "%.1f%%");
    cells.push_back({m.module, m.ms, m.estimated ? "url(#hatch)" : "#b6e3ff",
                     last_part(m.module) + " " + share + (m.estimated ? " est." : ""), share,
                     m.module + ": " + num(m.ms, "%.4f") + " ms, " + share + " of the total" +
                         (m.estimated ? " (includes time apportioned from fused layers: an estimate)" : "")});
  }
  return draw_icicle(std::move(cells), total_ms, max_depth, "time per module, as an icicle: width is the share of the total",
                     "<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
                     "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#ddf4ff\"/><line x1=\"0\" y1=\"0\" x2=\"0\" "
                     "y2=\"6\" stroke=\"#54aeff\" stroke-width=\"2\"/></pattern></defs>\n");
}

std::string differential_icicle(const std::vector<ModuleChange>& modules, int max_depth) {
  double total = 0, largest = 0;
  for (const ModuleChange& m : modules) {
    if (std::count(m.module.begin(), m.module.end(), '/') <= 1)
      total += std::max(m.time.baseline_ms, m.time.candidate_ms);  // the top level spans the chart
    largest = std::max(largest, std::fabs(m.time.delta_ms()));
  }
  std::vector<IcicleCell> cells;
  for (const ModuleChange& m : modules) {
    const double delta = m.time.delta_ms();
    // Red for slower, green for faster, deeper the larger the change; grey under 2% of the largest.
    const double strength = largest > 0 ? std::fabs(delta) / largest : 0;
    const char* const reds[] = {"#ffebe9", "#ffcecb", "#ffaba8", "#ff8182"};
    const char* const greens[] = {"#dafbe1", "#aceebb", "#6fdd8b", "#4ac26b"};
    const int shade = std::min(3, int(strength * 4));
    const std::string fill = strength < 0.02 ? "#eaeef2" : delta > 0 ? reds[shade] : greens[shade];
    const std::string change = num(delta, "%+.4f") + " ms";
    std::string interval;
    if (std::isfinite(m.time.delta_ci.low))
      interval = " [" + num(m.time.delta_ci.low, "%+.4f") + ", " + num(m.time.delta_ci.high, "%+.4f") + "]";
    cells.push_back({m.module, std::max(m.time.baseline_ms, m.time.candidate_ms), fill, last_part(m.module) + " " + change,
                     change,
                     m.module + ": " + num(m.time.baseline_ms, "%.4f") + " → " + num(m.time.candidate_ms, "%.4f") + " ms, " +
                         change + interval + (m.estimated ? " (includes time apportioned from fused layers: an estimate)" : "")});
  }
  return draw_icicle(std::move(cells), total, max_depth,
                     "the change of time per module, as an icicle: width is the larger of the two times, red slower, "
                     "green faster",
                     "");
}

}  // namespace fb::svg
