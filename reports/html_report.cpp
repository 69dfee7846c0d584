#include "reports/html_report.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "engine/ir/error.h"

namespace fb {

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

using json = nlohmann::json;

// ---- number formatting: fixed, readable precision; "—" where there is no number ----

const char* const kNone = "—";

std::string printf_double(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string fmt_ms(double v) {
  if (!std::isfinite(v)) return kNone;
  double a = std::fabs(v);
  return printf_double(a < 1 ? "%.4f" : a < 10 ? "%.3f" : a < 100 ? "%.2f" : "%.1f", v);
}

std::string fmt_speedup(double v) {
  if (!std::isfinite(v) || v <= 0) return kNone;
  return printf_double("%.2f", v) + "×";
}

std::string fmt_rate(double v) {
  if (!std::isfinite(v) || v <= 0) return kNone;
  return printf_double(v < 100 ? "%.2f" : "%.0f", v);
}

std::string fmt_err(double v) {
  if (std::isnan(v)) return "NaN";
  return printf_double("%.2e", v);
}

std::string fmt_cosine(double v) {
  if (std::isnan(v)) return "NaN";
  return printf_double("%.8f", v);
}

std::string fmt_bytes(int64_t bytes) {
  if (bytes <= 0) return kNone;
  return printf_double("%.1f GiB", double(bytes) / (1024.0 * 1024.0 * 1024.0));
}

std::string or_none(const std::string& s) { return s.empty() ? kNone : html_escape(s); }

bool timed(const Measurement& m) { return m.stats.n > 0 || !m.samples_ms.empty(); }

// "1.234 [1.456]": median with the p90 beside it.
std::string median_p90(const Measurement& m) {
  if (!timed(m)) return kNone;
  return fmt_ms(m.stats.median) + " <span class=\"p90\">[" + fmt_ms(m.stats.p90) + "]</span>";
}

// A case's name within its scenario: the scenario is already the section heading.
std::string short_label(const CaseSpec& s) {
  return "b=" + std::to_string(s.batch) + " " + s.precision + " " + s.fusion +
         " t=" + std::to_string(s.threads);
}

std::string status_class(const std::string& status) {
  if (status == "passed") return "passed";
  if (status == "failed") return "failed";
  return "error";
}

// ---- the style sheet ----

const char* const kStyle = R"css(
:root { --fg: #1f2328; --muted: #656d76; --line: #d0d7de; --head: #f6f8fa;
        --ok: #1a7f37; --bad: #cf222e; --warn: #9a6700; --badbg: #ffebe9; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: var(--fg); margin: 0 auto; padding: 24px 32px 48px; max-width: 1400px;
       line-height: 1.45; font-size: 14px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 36px 0 8px; padding-bottom: 6px; border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 20px 0 8px; }
h4 { font-size: 13px; margin: 14px 0 6px; color: var(--muted); text-transform: uppercase;
     letter-spacing: .04em; }
.muted, .sub { color: var(--muted); }
code, pre, .num, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; }
table { border-collapse: collapse; margin: 8px 0 16px; }
th, td { border: 1px solid var(--line); padding: 4px 8px; vertical-align: top; text-align: left; }
th { background: var(--head); font-weight: 600; white-space: nowrap; }
td.num, th.num { text-align: right; white-space: nowrap; }
table.kv th { text-align: left; width: 160px; }
table.cases { width: 100%; }
tr.case.bad td { background: var(--badbg); }
tr.case.bad td:first-child { box-shadow: inset 4px 0 0 var(--bad); }
tr.error-row td { background: var(--badbg); color: var(--bad); font-size: 13px; white-space: pre-wrap;
                  font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.p90 { color: var(--muted); }
.badge { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 12px;
         font-weight: 600; color: #fff; }
.badge.passed { background: var(--ok); } .badge.failed { background: var(--bad); }
.badge.error { background: var(--warn); }
.pills span { margin-right: 8px; }
nav ul { margin: 4px 0; padding-left: 20px; }
details { border: 1px solid var(--line); border-radius: 6px; margin: 6px 0; padding: 0 12px; }
details[open] { padding-bottom: 10px; }
summary { cursor: pointer; padding: 6px 0; font-weight: 600; }
pre { background: var(--head); border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px;
      overflow-x: auto; font-size: 12px; max-height: 480px; }
figure { margin: 8px 0 16px; }
figcaption { color: var(--muted); font-size: 12px; }
svg.chart { display: block; max-width: 100%; height: auto; }
footer { margin-top: 40px; color: var(--muted); font-size: 12px; }
)css";

// ---- sections ----

void kv_row(std::ostringstream& o, const char* key, const std::string& value_html) {
  o << "<tr><th>" << key << "</th><td>" << value_html << "</td></tr>\n";
}

std::string library_versions_html(const json& libs) {
  if (libs.is_null() || (libs.is_object() && libs.empty())) return kNone;
  if (!libs.is_object()) return "<code>" + html_escape(libs.dump(-1, ' ', false, json::error_handler_t::replace)) + "</code>";
  std::string out;
  for (auto it = libs.begin(); it != libs.end(); ++it) {
    if (!out.empty()) out += ", ";
    std::string v = it.value().is_string() ? it.value().get<std::string>()
                                           : it.value().dump(-1, ' ', false, json::error_handler_t::replace);
    out += html_escape(it.key()) + " <span class=\"mono\">" + html_escape(v) + "</span>";
  }
  return out;
}

void render_summary(std::ostringstream& o, const StoredRun& run, const std::vector<StoredCase>& cases,
                    const std::string& db_path) {
  int passed = 0, failed = 0, errors = 0;
  for (const StoredCase& c : cases) {
    const std::string& s = c.result.status;
    if (s == "passed") ++passed;
    else if (s == "failed") ++failed;
    else ++errors;
  }
  const RunInfo& i = run.info;
  o << "<section class=\"summary\">\n<h2>Run " << run.id << "</h2>\n";
  o << "<p class=\"pills\"><span class=\"badge passed\">" << passed << " passed</span>"
    << "<span class=\"badge failed\">" << failed << " failed</span>"
    << "<span class=\"badge error\">" << errors << " errors</span>"
    << "<span class=\"muted\">" << cases.size() << " cases</span></p>\n";
  o << "<table class=\"kv\">\n";
  kv_row(o, "Started", "<span class=\"mono\">" + or_none(i.started_at) + "</span>");
  kv_row(o, "Finished",
         run.finished_at.empty() ? std::string("<span class=\"muted\">not finished (running or interrupted)</span>")
                                 : "<span class=\"mono\">" + html_escape(run.finished_at) + "</span>");
  kv_row(o, "Git commit",
         "<span class=\"mono\">" + or_none(i.git_commit) + "</span>" +
             (i.git_dirty ? " <span class=\"badge error\">dirty</span>" : ""));
  kv_row(o, "Host", or_none(i.host));
  kv_row(o, "CPU", or_none(i.cpu_model));
  kv_row(o, "CPU flags", "<span class=\"mono\">" + or_none(i.cpu_flags) + "</span>");
  kv_row(o, "Cores", i.cores > 0 ? std::to_string(i.cores) : kNone);
  kv_row(o, "Memory", fmt_bytes(i.memory_bytes));
  kv_row(o, "Kernel", or_none(i.kernel));
  kv_row(o, "Compiler", or_none(i.compiler) + (i.compiler_flags.empty() ? "" : " <span class=\"mono\">" +
                                                                               html_escape(i.compiler_flags) + "</span>"));
  kv_row(o, "Libraries", library_versions_html(i.library_versions));
  kv_row(o, "fusebench", or_none(i.fusebench_version));
  kv_row(o, "Command", "<code>" + or_none(i.command) + "</code>");
  kv_row(o, "Database", "<code>" + html_escape(db_path) + "</code>");
  o << "</table>\n</section>\n";
}

void render_case_table(std::ostringstream& o, const std::vector<const StoredCase*>& cases) {
  o << "<table class=\"cases\">\n<thead><tr><th>Model</th><th>Precision</th><th class=\"num\">Batch</th>"
       "<th>Fusion</th><th class=\"num\">Threads</th><th class=\"num\">Engine ms [p90]</th>"
       "<th class=\"num\">Reference ms [p90]</th><th class=\"num\">Speedup</th>"
       "<th class=\"num\">Engine items/s</th><th class=\"num\">Max abs err</th>"
       "<th class=\"num\">Cosine</th><th>Status</th></tr></thead>\n<tbody>\n";
  for (const StoredCase* sc : cases) {
    const CaseResult& r = sc->result;
    const CaseSpec& s = r.spec;
    const bool bad = r.status != "passed";
    o << "<tr class=\"case" << (bad ? " bad" : "") << "\" id=\"case-" << sc->id << "\">"
      << "<td class=\"mono\">" << html_escape(s.model) << "</td>"
      << "<td>" << html_escape(s.precision) << "</td>"
      << "<td class=\"num\">" << s.batch << "</td>"
      << "<td>" << html_escape(s.fusion) << "</td>"
      << "<td class=\"num\">" << s.threads << "</td>"
      << "<td class=\"num\">" << median_p90(r.engine) << "</td>"
      << "<td class=\"num\">" << median_p90(r.reference) << "</td>"
      << "<td class=\"num\">" << fmt_speedup(r.speedup)
      << (std::isfinite(r.speedup_ci_low) && r.speedup_ci_high > 0
              ? " <span class=\"p90\">[" + printf_double("%.2f", r.speedup_ci_low) + ", " +
                    printf_double("%.2f", r.speedup_ci_high) + "]</span>"
              : std::string())
      << (r.noisy ? " <span class=\"badge error\" title=\"timing stopped (" + html_escape(r.stop_reason) +
                        ") before its confidence target: verdicts on it are inconclusive\">noisy</span>"
                  : std::string())
      << "</td>"
      << "<td class=\"num\">" << (timed(r.engine) ? fmt_rate(r.engine.items_per_s) : kNone) << "</td>"
      << "<td class=\"num\">" << (r.status == "error" ? kNone : fmt_err(r.accuracy.max_abs_err)) << "</td>"
      << "<td class=\"num\">" << (r.status == "error" ? kNone : fmt_cosine(r.accuracy.cosine)) << "</td>"
      << "<td><span class=\"badge " << status_class(r.status) << "\">" << html_escape(r.status)
      << "</span></td></tr>\n";
    // Why it failed, right under the row.
    std::string why = !r.error.empty() ? r.error : (bad ? r.accuracy.detail : "");
    if (!why.empty()) {
      o << "<tr class=\"error-row\"><td colspan=\"12\">" << html_escape(why) << "</td></tr>\n";
    }
  }
  o << "</tbody>\n</table>\n";
}

// Horizontal bars, one per case, with a dashed line at 1.0×. Presentation attributes
// rather than CSS classes, so the chart also reads on its own when copied out.
void render_speedup_chart(std::ostringstream& o, const std::vector<const StoredCase*>& cases) {
  const int label_w = 240, plot_w = 460, value_w = 80, row_h = 24, top = 22, bottom = 8;
  const int width = label_w + plot_w + value_w;
  const int height = top + row_h * static_cast<int>(cases.size()) + bottom;
  double max_speedup = 1.0;
  for (const StoredCase* sc : cases) {
    double v = sc->result.speedup;
    if (std::isfinite(v) && v > max_speedup) max_speedup = v;
  }
  const double scale = plot_w / (max_speedup * 1.1);
  auto x_of = [&](double v) { return printf_double("%.1f", label_w + v * scale); };
  const int text_dy = row_h / 2 + 4;

  o << "<figure>\n<svg class=\"chart\" width=\"" << width << "\" height=\"" << height
    << "\" viewBox=\"0 0 " << width << " " << height
    << "\" role=\"img\" aria-label=\"speedup per case\" font-size=\"12\" fill=\"#1f2328\""
       " font-family=\"ui-monospace, SFMono-Regular, Menlo, Consolas, monospace\">\n";
  o << "<line stroke=\"#656d76\" x1=\"" << label_w << "\" y1=\"" << top - 4 << "\" x2=\"" << label_w
    << "\" y2=\"" << height - bottom << "\"/>\n";
  for (size_t k = 0; k < cases.size(); ++k) {
    const CaseResult& r = cases[k]->result;
    const int y = top + row_h * static_cast<int>(k);
    o << "<text x=\"" << label_w - 8 << "\" y=\"" << y + text_dy << "\" text-anchor=\"end\">"
      << html_escape(short_label(r.spec)) << "</text>\n";
    const double v = r.speedup;
    if (std::isfinite(v) && v > 0) {
      o << "<rect fill=\"" << (v < 1 ? "#d4a72c" : "#2da44e") << "\" x=\"" << label_w << "\" y=\""
        << y + 4 << "\" width=\"" << printf_double("%.1f", v * scale) << "\" height=\"" << row_h - 8
        << "\"><title>" << html_escape(r.spec.label()) << ": " << fmt_speedup(v) << "</title></rect>\n";
      o << "<text x=\"" << printf_double("%.1f", label_w + v * scale + 6) << "\" y=\"" << y + text_dy
        << "\">" << fmt_speedup(v) << "</text>\n";
    } else {
      o << "<text fill=\"#656d76\" x=\"" << label_w + 6 << "\" y=\"" << y + text_dy << "\">n/a ("
        << html_escape(r.status) << ")</text>\n";
    }
  }
  const std::string x1 = x_of(1.0);
  o << "<line stroke=\"#cf222e\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\" x1=\"" << x1 << "\" y1=\""
    << top - 4 << "\" x2=\"" << x1 << "\" y2=\"" << height - bottom << "\"/>\n";
  o << "<text x=\"" << x1 << "\" y=\"" << top - 8 << "\" text-anchor=\"middle\" fill=\"#cf222e\">1.0×</text>\n";
  o << "</svg>\n<figcaption>Speedup = reference median / engine median; the dashed line marks 1.0×"
       " (no faster than the reference).</figcaption>\n</figure>\n";
}

void render_case_details(std::ostringstream& o, const StoredCase& sc) {
  const CaseResult& r = sc.result;
  const CaseSpec& s = r.spec;
  o << "<details id=\"details-" << sc.id << "\"><summary>" << html_escape(s.label())
    << " <span class=\"badge " << status_class(r.status) << "\">" << html_escape(r.status)
    << "</span></summary>\n";
  o << "<table class=\"kv\">\n";
  kv_row(o, "Case key", "<span class=\"mono\">" + html_escape(s.case_key()) + "</span>");
  kv_row(o, "Model", "<span class=\"mono\">" + or_none(s.model) + "</span>");
  kv_row(o, "Model hash", "<span class=\"mono\">" + or_none(s.model_hash) + "</span>");
  kv_row(o, "Samples", std::to_string(r.engine.samples_ms.size()) + " engine, " +
                           std::to_string(r.reference.samples_ms.size()) + " reference");
  // Everything the timer recorded about each executor's distribution, and what it measured
  // about the machine meanwhile: the numbers that tell a real difference from interference.
  for (const Measurement* m : {&r.engine, &r.reference}) {
    if (!timed(*m)) continue;
    const SampleStats& st = m->stats;
    kv_row(o, m == &r.engine ? "Engine distribution" : "Reference distribution",
           "<span class=\"mono\">min " + fmt_ms(st.min) + ", median " + fmt_ms(st.median) + " [bootstrap " +
               fmt_ms(st.boot_ci_low) + ", " + fmt_ms(st.boot_ci_high) + "], p95 " + fmt_ms(st.p95) + ", p99 " +
               fmt_ms(st.p99) + " ms; CV " + printf_double("%.1f%%", 100 * st.cv) + "; outliers " +
               std::to_string(st.outliers_low) + " low, " + std::to_string(st.outliers_high) +
               " high; page faults per iteration " + printf_double("%.1f", m->minor_faults.mean) + " minor [" +
               std::to_string(m->minor_faults.min) + "–" + std::to_string(m->minor_faults.max) + "], " +
               printf_double("%.1f", m->major_faults.mean) + " major</span>");
  }
  const Interference& in = r.interference;
  kv_row(o, "Timing conditions",
         "<span class=\"mono\">stopped: " + or_none(r.stop_reason) + (r.noisy ? " (noisy)" : "") +
             "; timer overhead " + printf_double("%.0f ns", r.timer_overhead_ns) + "; load " +
             printf_double("%.2f", in.load_before) + " → " + printf_double("%.2f", in.load_after) +
             "; other processes' CPU " + printf_double("%.0f ms", in.other_cpu_ms) + " in " +
             printf_double("%.0f ms", in.timed_wall_ms) + "; CPU clock " + printf_double("%.0f", in.cpu_mhz_before) +
             " → " + printf_double("%.0f MHz", in.cpu_mhz_after) + "; pinned to " +
             (r.pinned_cpus.empty() ? std::string("no CPUs") : "CPUs " + html_escape(r.pinned_cpus)) + "; activation memory " +
             printf_double("%.2f MiB", static_cast<double>(r.engine_memory_bytes) / (1024.0 * 1024.0)) + " engine (planned arena), " +
             printf_double("%.2f MiB", static_cast<double>(r.reference_memory_bytes) / (1024.0 * 1024.0)) +
             " reference (peak live)</span>");
  kv_row(o, "First iteration ms", "<span class=\"mono\">" + fmt_ms(r.engine.first_iteration_ms) +
                                      " engine, " + fmt_ms(r.reference.first_iteration_ms) +
                                      " reference</span>");
  kv_row(o, "Build", "<span class=\"mono\">" + fmt_ms(r.build_ms) + " ms</span>, " +
                         std::to_string(r.onnx_nodes) + " ONNX nodes → " +
                         std::to_string(r.layers.size()) + " engine layers");
  kv_row(o, "Accuracy", "<span class=\"mono\">max abs " + fmt_err(r.accuracy.max_abs_err) +
                            ", max rel " + fmt_err(r.accuracy.max_rel_err) + ", cosine " +
                            fmt_cosine(r.accuracy.cosine) + "</span> (atol " +
                            printf_double("%g", s.accuracy.atol) + ", rtol " +
                            printf_double("%g", s.accuracy.rtol) + ")");
  if (!r.accuracy.detail.empty()) kv_row(o, "Accuracy detail", html_escape(r.accuracy.detail));
  if (!r.error.empty()) kv_row(o, "Error", "<span class=\"mono\">" + html_escape(r.error) + "</span>");
  o << "</table>\n";

  o << "<h4>Build log</h4>\n";
  if (r.build_log.empty()) o << "<p class=\"muted\">No build log.</p>\n";
  else o << "<pre>" << html_escape(r.build_log) << "</pre>\n";

  o << "<h4>Layers (" << r.layers.size() << ")</h4>\n";
  if (r.layers.empty()) {
    o << "<p class=\"muted\">No layer map recorded.</p>\n";
  } else {
    o << "<table class=\"layers\"><thead><tr><th class=\"num\">#</th><th>Kind</th><th>Name</th>"
         "<th>Source ONNX nodes</th></tr></thead>\n<tbody>\n";
    for (const LayerRecord& l : r.layers) {
      std::string sources;
      for (const std::string& src : l.sources) {
        if (!sources.empty()) sources += ", ";
        sources += html_escape(src);
      }
      o << "<tr><td class=\"num\">" << l.index << "</td><td class=\"mono\">" << html_escape(l.kind)
        << "</td><td class=\"mono\">" << html_escape(l.name) << "</td><td class=\"mono\">"
        << (sources.empty() ? kNone : sources) << "</td></tr>\n";
    }
    o << "</tbody></table>\n";
  }
  o << "</details>\n";
}

}  // namespace

std::string render_html_report(const ResultStore& store, std::optional<int64_t> run_id) {
  if (!run_id) {
    run_id = store.latest_run();
    if (!run_id) throw Error(store.path() + " has no runs to report on");
  }
  const StoredRun run = store.load_run(*run_id);
  const std::vector<StoredCase> cases = store.load_cases(*run_id);

  // Scenarios in the order their first case was stored.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const StoredCase*>> by_scenario;
  for (const StoredCase& c : cases) {
    auto& list = by_scenario[c.result.spec.scenario];
    if (list.empty()) order.push_back(c.result.spec.scenario);
    list.push_back(&c);
  }

  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    << "<title>fusebench report — run " << run.id << " (" << html_escape(run.info.started_at)
    << ")</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n";
  o << "<header><h1>fusebench report</h1><p class=\"sub\">Run " << run.id << " of <code>"
    << html_escape(store.path()) << "</code>, started <span class=\"mono\">"
    << or_none(run.info.started_at) << "</span></p></header>\n";

  render_summary(o, run, cases, store.path());

  if (order.empty()) {
    o << "<p class=\"muted\">This run has no stored cases.</p>\n";
  } else {
    o << "<nav><h3>Scenarios</h3><ul>\n";
    for (size_t k = 0; k < order.size(); ++k) {
      o << "<li><a href=\"#scenario-" << k << "\">" << html_escape(order[k].empty() ? "(unnamed)" : order[k])
        << "</a> <span class=\"muted\">(" << by_scenario[order[k]].size() << " cases)</span></li>\n";
    }
    o << "</ul></nav>\n";
  }

  for (size_t k = 0; k < order.size(); ++k) {
    const std::vector<const StoredCase*>& list = by_scenario[order[k]];
    const CaseSpec& first = list.front()->result.spec;
    o << "<section class=\"scenario\" id=\"scenario-" << k << "\">\n<h2>Scenario: "
      << html_escape(order[k].empty() ? "(unnamed)" : order[k]) << "</h2>\n";
    o << "<p class=\"muted\">";
    if (!first.scenario_file.empty()) o << "File <code>" << html_escape(first.scenario_file) << "</code> · ";
    o << "model <code>" << html_escape(first.model) << "</code></p>\n";
    render_case_table(o, list);
    render_speedup_chart(o, list);
    o << "<h3>Cases in detail</h3>\n";
    for (const StoredCase* sc : list) render_case_details(o, *sc);
    o << "</section>\n";
  }

  o << "<footer>Generated by fusebench " << html_escape(run.info.fusebench_version) << " from <code>"
    << html_escape(store.path()) << "</code>.</footer>\n</body>\n</html>\n";
  return o.str();
}

void write_html_report(const ResultStore& store, const std::string& out_path,
                       std::optional<int64_t> run_id) {
  const std::string html = render_html_report(store, run_id);  // render first: no file on failure
  const std::string tmp = out_path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw Error("cannot write the report to " + out_path + ": " + std::strerror(errno));
    f << html;
    f.flush();
    if (!f) {
      int err = errno;
      f.close();
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      throw Error("cannot write the report to " + out_path + ": " + std::strerror(err));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, out_path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw Error("cannot write the report to " + out_path + ": " + ec.message());
  }
}

}  // namespace fb
