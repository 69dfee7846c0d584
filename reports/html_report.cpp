#include "reports/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>
#include <vector>

#include "engine/ir/error.h"
#include "harness/util/atomic_file.h"
#include "harness/util/format_number.h"
#include "reports/load_section.h"
#include "reports/report_assets.h"
#include "reports/svg_charts.h"

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

std::string json_for_script(const nlohmann::json& j) {
  const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else if (c == '\xE2' && i + 2 < text.size() && text[i + 1] == '\x80' && (text[i + 2] == '\xA8' || text[i + 2] == '\xA9')) {
      out += text[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";  // line separators end a JavaScript line
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

using json = nlohmann::json;

// ---- formatting: fixed, readable precision; "—" where there is no number ----

const char* const kNone = "—";

std::string fmt_ms(double v) {
  if (!std::isfinite(v)) return kNone;
  const double a = std::fabs(v);
  return format_number(a < 1 ? "%.4f" : a < 10 ? "%.3f" : a < 100 ? "%.2f" : "%.1f", v);
}

std::string fmt_speedup(double v) {
  if (!std::isfinite(v) || v <= 0) return kNone;
  return format_number("%.2f", v) + "×";
}

std::string fmt_pct(double v) { return std::isfinite(v) ? signed_percent(v) : kNone; }
std::string fmt_err(double v) { return std::isnan(v) ? "NaN" : format_number("%.2e", v); }

std::string or_none(const std::string& s) { return s.empty() ? kNone : html_escape(s); }
std::string mono(const std::string& s) { return "<span class=\"mono\">" + or_none(s) + "</span>"; }
std::string short_commit(const std::string& c) { return c.substr(0, 12); }

bool timed(const Measurement& m) { return m.stats.n > 0 || !m.samples_ms.empty(); }

// "1.234 [1.220, 1.251]": a median with its 95% interval.
std::string with_ci(const Measurement& m) {
  if (!timed(m)) return kNone;
  return fmt_ms(m.stats.median) + " <span class=\"ci\">[" + fmt_ms(m.stats.ci_low) + ", " + fmt_ms(m.stats.ci_high) +
         "]</span>";
}

std::string speedup_with_ci(const CaseResult& r) {
  std::string s = fmt_speedup(r.speedup);
  if (std::isfinite(r.speedup_ci_low) && r.speedup_ci_high > 0)
    s += " <span class=\"ci\">[" + format_number("%.2f", r.speedup_ci_low) + ", " + format_number("%.2f", r.speedup_ci_high) +
         "]</span>";
  return s;
}

// How noisy one executor's timing was: its spread and how tight its median is.
std::string noise_of(const Measurement& m) {
  if (!timed(m) || !(m.stats.median > 0)) return kNone;
  const double half = (m.stats.ci_high - m.stats.ci_low) / 2 / m.stats.median;
  return "CV " + format_number("%.1f%%", 100 * m.stats.cv) + ", median ±" + format_number("%.1f%%", 100 * half);
}

// A case's name within its scenario (the scenario heads its section).
std::string short_label(const CaseSpec& s) {
  return "b=" + std::to_string(s.batch) + " " + precision_name(s.precision) + " " + fusion_level_name(s.fusion) +
         " t=" + std::to_string(s.threads) + s.shapes_label();
}

std::string case_anchor(size_t i) { return "case-" + std::to_string(i); }
std::string explanation_anchor(size_t i) { return "explain-" + std::to_string(i); }

std::string case_link(const ReportModel& m, size_t i) {
  return "<a class=\"wrap\" href=\"#" + case_anchor(i) + "\">" + html_escape(m.cases[i].stored.result.spec.label()) + "</a>";
}

std::string run_link(const StoredRun& r) {
  return "<a href=\"#run-" + std::to_string(r.id) + "\">run " + std::to_string(r.id) + "</a>";
}

std::string badge(const std::string& cls, const std::string& text) {
  return "<span class=\"badge " + cls + "\">" + html_escape(text) + "</span>";
}

std::string outcome_badge(Outcome o) {
  return badge(o == Outcome::kPass ? "pass" : o == Outcome::kFail ? "fail" : "inconclusive", outcome_name(o));
}

std::string status_badge(CaseStatus status) {
  return badge(case_status_name(status), case_status_name(status));
}

void kv_row(std::ostringstream& o, const std::string& key, const std::string& value_html) {
  o << "<tr><th>" << html_escape(key) << "</th><td>" << value_html << "</td></tr>\n";
}

// The run where a case's series of `metric` last changed, per `fusebench history`, if any:
// "since run 37 (-5.1%)". The verdicts read the speedup's, as compare's verdict rests on it.
std::string since_text(const ReportModel& m, const ReportCase& c, Metric metric) {
  const auto& changes = c.history.changes[size_t(metric)];
  if (changes.empty()) return "";
  const ChangePoint& cp = changes.back();
  const StoredRun& run = m.history_runs[c.history.points[cp.index].run];
  return "since " + run_link(run) + " <span class=\"ci\">(" + fmt_pct(cp.step) + ", " + mono(short_commit(run.info.git_commit)) +
         ")</span>";
}

// ---- header and verdicts ----

void render_banner(std::ostringstream& o, const ReportModel& m) {
  const GateReport& g = m.gate;
  const size_t n = m.cases.size();
  std::vector<std::string> bad, unsure;
  if (g.failed) bad.push_back(std::to_string(g.failed) + " of " + std::to_string(n) + " cases fail the gate");
  if (!m.regressions.empty()) bad.push_back(std::to_string(m.regressions.size()) + " slower than " + m.baseline_name);
  if (!m.errors.empty()) bad.push_back(std::to_string(m.errors.size()) + " errored");
  if (g.inconclusive) unsure.push_back(std::to_string(g.inconclusive) + " gate verdicts inconclusive");
  if (!m.noisy.empty()) unsure.push_back(std::to_string(m.noisy.size()) + " noisy (a verdict on them cannot be trusted)");
  const auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "; " : "") + v[i];
    return s;
  };
  std::string cls, head, body;
  if (n == 0) {
    cls = "grey", head = "No cases", body = "This run stored no cases.";
  } else if (!bad.empty()) {
    cls = "red", head = "Attention", body = join(bad) + (unsure.empty() ? "" : "; " + join(unsure)) + ".";
  } else if (!unsure.empty()) {
    cls = "amber", head = "Inconclusive", body = join(unsure) + "; nothing is known to be worse.";
  } else if (!m.baseline) {
    cls = "grey", head = "Gate passed, no baseline",
    body = "All " + std::to_string(n) + " cases pass the gate, but there is no earlier run to compare with.";
  } else {
    cls = "green", head = "All clear";
    body = "All " + std::to_string(n) + " cases pass the gate; none is slower than " + m.baseline_name +
           " (as fusebench compare judges: against the noise between processes and runs, α " +
           format_number("%g", m.options.compare.alpha) + ", a change of at least " +
           format_number("%g%%", 100 * m.options.compare.min_effect) + "); no case is noisy or errored.";
  }
  o << "<div class=\"banner " << cls << "\" id=\"banner\"><strong>" << html_escape(head) << ".</strong> " << html_escape(body)
    << "</div>\n";
}

void render_gate(std::ostringstream& o, const ReportModel& m) {
  const GateReport& g = m.gate;
  o << "<h3>Gate " << outcome_badge(g.outcome) << "</h3>\n<p class=\"muted\">" << g.passed << " pass, " << g.failed
    << " fail, " << g.inconclusive << " inconclusive; rules from each case's scenario, as <code>fusebench gate</code>"
    << (m.baseline ? " judges them against " + html_escape(m.baseline_name) : std::string(" (no baseline: max_regression not judged)"))
    << ".</p>\n";
  std::vector<size_t> shown;
  for (size_t i = 0; i < g.cases.size(); ++i)
    if (g.cases[i].outcome != Outcome::kPass) shown.push_back(i);
  if (shown.empty()) {
    o << "<p>Every case passes every rule that applies to it.</p>\n";
    return;
  }
  o << "<div class=\"scroll\"><table class=\"full\"><thead><tr><th>Outcome</th><th>Case</th><th>Rules that did not pass</th>"
       "</tr></thead><tbody>\n";
  for (size_t i : shown) {
    const CaseVerdict& v = g.cases[i];
    o << "<tr class=\"" << (v.outcome == Outcome::kFail ? "bad" : "warn") << "\"><td>" << outcome_badge(v.outcome) << "</td><td>"
      << case_link(m, i) << "</td><td class=\"wrap\">";
    for (const RuleResult& rr : v.rules)
      if (rr.outcome != Outcome::kPass)
        o << "<div><b>" << html_escape(rr.rule) << "</b> " << outcome_badge(rr.outcome) << " " << html_escape(rr.detail)
          << "</div>";
    o << "</td></tr>\n";
  }
  o << "</tbody></table></div>\n";
}

// A figure's change as compare prints it ("+10.0% ±2.1%": the change and the smallest change
// its noise lets through), then its interval at compare's level.
std::string figure_change(const FigureChange& f) {
  if (!std::isfinite(f.noise)) return "<b>" + html_escape(change_text(f)) + "</b> <span class=\"muted\">(" + or_none(f.noise_source) + ")</span>";
  return "<b>" + html_escape(change_text(f)) + "</b> <span class=\"ci\">[" + fmt_pct(f.change_ci.low) + ", " +
         fmt_pct(f.change_ci.high) + "]</span>";
}

// "1.41× → 1.32×" or "2.000 → 2.200 ms": a figure in the baseline and in this run.
std::string figure_values(const FigureChange& f, bool speedup) {
  return speedup ? fmt_speedup(f.baseline) + " → " + fmt_speedup(f.candidate)
                 : fmt_ms(f.baseline) + " → " + fmt_ms(f.candidate) + " ms";
}

// A case's judgement as `fusebench compare` makes it: verdict, the speedup's and the engine's
// change with interval and noise, the reference's change, why, and where the noise came from.
void render_changes(std::ostringstream& o, const ReportModel& m, const std::vector<size_t>& list, const char* title,
                    const char* cls) {
  o << "<h3>" << title << " <span class=\"muted\">(" << list.size() << ")</span></h3>\n";
  if (list.empty()) {
    o << "<p class=\"muted\">None.</p>\n";
    return;
  }
  o << "<div class=\"scroll\"><table class=\"full verdicts\"><thead><tr><th>Case</th><th>Verdict</th><th>Speedup</th>"
       "<th>Speedup change ±noise [interval]</th><th>Engine</th><th>Engine change ±noise [interval]</th>"
       "<th class=\"num\">Reference</th><th>Speedup history</th></tr></thead><tbody>\n";
  for (size_t i : list) {
    const ReportCase& c = m.cases[i];
    const CaseJudgement& j = *c.judgement;
    const char* v = verdict_name(j.verdict);
    o << "<tr class=\"" << cls << "\"><td>" << case_link(m, i) << "</td><td>" << badge(v, v) << "</td><td class=\"nowrap\">"
      << figure_values(j.speedup, true) << "</td><td class=\"nowrap\">" << figure_change(j.speedup) << "</td><td class=\"nowrap\">"
      << figure_values(j.engine, false) << "</td><td class=\"nowrap\">" << figure_change(j.engine) << "</td><td class=\"num\">"
      << fmt_pct(j.reference.change) << "</td><td>" << since_text(m, c, Metric::kSpeedup) << "</td></tr>\n";
    // Why, on a line of its own as compare prints it.
    o << "<tr class=\"" << cls << " why\"><td></td><td colspan=\"7\" class=\"wrap\">" << html_escape(j.reason)
      << "; noise from " << html_escape(j.speedup.noise_source) << "</td></tr>\n";
    // Where the time went: the explanation's first region, linked to the whole.
    o << "<tr class=\"" << cls << " why\"><td></td><td colspan=\"7\" class=\"wrap\">";
    if (c.explanation && !c.explanation->regions.empty()) {
      const RegionChange& r = c.explanation->regions.front();
      o << "<a href=\"#" << explanation_anchor(i) << "\">explanation</a>: first " << html_escape(r.name) << " ("
        << html_escape(r.shape) << ", " << format_number("%+.4f ms", r.time.delta_ms()) << ")";
      if (!r.decisions.empty())
        o << "; " << html_escape(r.decisions.front().pass) << " at " << mono(r.decisions.front().root);
    } else {
      o << "<span class=\"muted\">no explanation: " << html_escape(c.explanation_note) << "</span>";
    }
    o << "</td></tr>\n";
  }
  o << "</tbody></table></div>\n";
}

std::string ms_change(double v) { return format_number("%+.4f", v); }

std::string interval_cell(const Interval& i) {
  return std::isfinite(i.low) ? "[" + ms_change(i.low) + ", " + ms_change(i.high) + "]" : "";
}

// `fusebench explain` for one regression or improvement: the reconciliation, the module
// icicle of the change, and the regions that changed most with the decisions behind them.
void render_explanation(std::ostringstream& o, const ReportModel& m, size_t i) {
  const Explanation& e = *m.cases[i].explanation;
  o << "<div class=\"explanation\" id=\"" << explanation_anchor(i) << "\"><h3>" << case_link(m, i) << "</h3>\n<p>Measured (engine median): "
    << format_number("%.4f", e.measured.baseline_ms) << " → " << format_number("%.4f ms", e.measured.candidate_ms) << ", "
    << ms_change(e.measured.delta_ms()) << " ms " << interval_cell(e.measured.delta_ci) << ". Profiled (sum of layer medians): "
    << ms_change(e.profiled.delta_ms()) << " ms " << interval_cell(e.profiled.delta_ci) << ", "
    << (e.reconciled() ? "inside" : "outside") << " the measured change's interval; unexplained "
    << ms_change(e.unexplained_ms()) << " ms.</p>\n";
  for (const std::string& c : cautions(e)) o << "<p><strong>Caution:</strong> " << html_escape(c) << ".</p>\n";
  o << "<figure>" << svg::differential_icicle(e.modules)
    << "<figcaption>The change by module: each as wide as the larger of its two times, red slower, green faster; "
       "hover for the times and the interval.</figcaption></figure>\n";
  o << "<div class=\"scroll\"><table class=\"full\"><thead><tr><th class=\"num\">Change ms</th><th>95% interval</th>"
       "<th>Layers (by their ONNX nodes)</th><th>How</th><th>Decisions and layer changes</th></tr></thead><tbody>\n";
  constexpr size_t kRows = 10;
  for (size_t k = 0; k < std::min(kRows, e.regions.size()); ++k) {
    const RegionChange& r = e.regions[k];
    o << "<tr><td class=\"num\">" << ms_change(r.time.delta_ms()) << "</td><td class=\"nowrap\">" << interval_cell(r.time.delta_ci)
      << "</td><td class=\"wrap\">" << html_escape(r.name) << "</td><td>" << html_escape(r.shape) << ", "
      << r.baseline_layers.size() << " → " << r.candidate_layers.size() << "</td><td class=\"wrap\">";
    for (const DecisionChange& d : r.decisions)
      o << "<div>" << html_escape(d.pass) << " at " << mono(d.root) << ": baseline " << html_escape(d.baseline) << "; now "
        << html_escape(d.candidate) << "</div>";
    for (const std::string& c : layer_changes_shown(r)) o << "<div class=\"muted\">" << html_escape(c) << "</div>";
    o << "</td></tr>\n";
  }
  o << "</tbody></table></div>\n";
  for (const FieldChange& f : e.configuration)
    o << "<p class=\"muted\">Setting " << mono(f.field) << ": " << mono(f.baseline) << " → " << mono(f.candidate) << "</p>\n";
  o << "</div>\n";
}

void render_explanations(std::ostringstream& o, const ReportModel& m) {
  std::vector<size_t> explained;
  for (const std::vector<size_t>* list : {&m.regressions, &m.improvements})
    for (size_t i : *list)
      if (m.cases[i].explanation) explained.push_back(i);
  if (explained.empty()) return;
  o << "<section id=\"explanations\"><h2>Explanations</h2>\n<p class=\"muted\">Each regression and improvement as "
       "<code>fusebench explain</code> gives it: the layers of the two builds matched through the ONNX nodes they were made "
       "from, largest change first, with the fusion decisions that differ; the intervals are those of one profiled pass.</p>\n";
  for (size_t i : explained) render_explanation(o, m, i);
  o << "</section>\n";
}

void render_noisy(std::ostringstream& o, const ReportModel& m) {
  o << "<h3>Noisy cases <span class=\"muted\">(" << m.noisy.size() << ")</span></h3>\n";
  if (m.noisy.empty()) {
    o << "<p class=\"muted\">None: every case met its timing target undisturbed, and no comparison was left undecided.</p>\n";
    return;
  }
  o << "<div class=\"scroll\"><table class=\"full\"><thead><tr><th>Case</th><th>Why</th><th>Engine noise</th>"
       "<th>Reference noise</th><th>Against the baseline: speedup change ±noise [interval]</th></tr></thead><tbody>\n";
  for (size_t i : m.noisy) {
    const ReportCase& c = m.cases[i];
    const CaseResult& r = c.stored.result;
    std::vector<std::string> why;
    if (r.noisy)
      why.push_back("timing stopped (" + html_escape(r.stop_reason) + ") before its target of ±" +
                    format_number("%g%%", 100 * r.spec.timing.target_rel_ci));
    if (!r.disturbed.empty()) why.push_back("disturbed by the machine: " + html_escape(r.disturbed));
    if (c.judgement && (c.judgement->verdict == Verdict::kNoisy || c.judgement->verdict == Verdict::kEnvironment))
      why.push_back(html_escape(c.judgement->reason) + "; noise from " + html_escape(c.judgement->speedup.noise_source));
    o << "<tr class=\"warn\"><td>" << case_link(m, i) << "</td><td class=\"wrap\">";
    for (size_t k = 0; k < why.size(); ++k) o << (k ? "<br>" : "") << why[k];
    o << "</td><td class=\"mono\">" << noise_of(r.engine) << "</td><td class=\"mono\">" << noise_of(r.reference) << "</td><td>";
    if (c.judgement) {
      const char* v = verdict_name(c.judgement->verdict);
      o << badge(v, v) << " " << figure_change(c.judgement->speedup);
    } else {
      o << html_escape(c.compare_note);
    }
    o << "</td></tr>\n";
  }
  o << "</tbody></table></div>\n";
}

void render_verdicts(std::ostringstream& o, const ReportModel& m) {
  o << "<section id=\"verdicts\"><h2>Verdicts</h2>\n";
  render_gate(o, m);
  if (!m.baseline) {
    o << "<h3>Against a baseline</h3><p class=\"muted\">No baseline: this is the first run of the database. Give "
         "<code>--baseline RUN</code> or <code>--baseline-db FILE</code>.</p>\n";
  } else {
    o << "<p class=\"muted\">Against " << html_escape(m.baseline_name) << " (started "
      << mono(m.baseline->info.started_at) << ", commit " << mono(short_commit(m.baseline->info.git_commit))
      << "), judged as <code>fusebench compare</code> judges: each figure's change against how far the case moves between "
         "worker processes and between earlier runs on this machine (the noise), at α "
      << format_number("%g", m.options.compare.alpha) << "; ± is the smallest change that noise lets through, the interval is "
      << format_number("%g%%", 100 * (1 - m.options.compare.alpha)) << ", and a change under "
      << format_number("%g%%", 100 * m.options.compare.min_effect)
      << " is never a verdict. The verdict rests on the speedup (reference / engine, timed interleaved); an engine that "
         "moved with the reference is <em>environment</em>."
      << (m.same_machine ? std::string()
                         : " The machines differ (" + html_escape(m.baseline_machine) + " → " + html_escape(m.machine) +
                               "): judged on the speedup only.")
      << "</p>\n";
    render_changes(o, m, m.regressions, "Regressions", "bad");
    render_changes(o, m, m.improvements, "Improvements", "good");
  }
  render_noisy(o, m);
  if (!m.errors.empty()) {
    o << "<h3>Errors <span class=\"muted\">(" << m.errors.size() << ")</span></h3><ul>\n";
    for (size_t i : m.errors)
      o << "<li>" << case_link(m, i) << ": <span class=\"mono wrap\">" << html_escape(m.cases[i].stored.result.error)
        << "</span></li>\n";
    o << "</ul>\n";
  }
  o << "</section>\n";
}

void render_environment(std::ostringstream& o, const ReportModel& m) {
  int differing = 0;
  for (const EnvField& f : m.environment) differing += f.differs;
  o << "<section id=\"environment\"><h2>Environment</h2>\n<p class=\"muted\">";
  if (m.baseline)
    o << differing << (differing == 1 ? " field differs" : " fields differ") << " from " << html_escape(m.baseline_name)
      << (differing ? " (highlighted)" : "") << ".";
  else
    o << "No baseline to compare the fingerprint with.";
  o << "</p>\n<div class=\"scroll\"><table class=\"full kv\"><thead><tr><th>Field</th><th>Run " << m.run.id << "</th>";
  if (m.baseline) o << "<th>" << html_escape(m.baseline_name) << "</th>";
  o << "</tr></thead><tbody>\n";
  for (const EnvField& f : m.environment) {
    o << "<tr" << (f.differs ? " class=\"diff\"" : "") << "><th>" << html_escape(f.name) << "</th><td class=\"mono wrap\">"
      << or_none(f.value) << "</td>";
    if (m.baseline) o << "<td class=\"mono wrap\">" << or_none(f.baseline_value) << "</td>";
    o << "</tr>\n";
  }
  o << "</tbody></table></div>\n</section>\n";
}

// ---- per case ----

std::string compare_cell(const ReportCase& c) {
  if (!c.judgement) return "<span class=\"muted\">" + html_escape(c.compare_note) + "</span>";
  const char* v = verdict_name(c.judgement->verdict);
  return badge(v, v) + " " + html_escape(change_text(c.judgement->speedup));
}

// What a dynamic engine costs against the static engine of the same case in this run
// (engine medians, side by side in one run), and its first run at a new shape.
std::string engine_shapes_cell(const ReportModel& m, size_t i) {
  const CaseResult& r = m.cases[i].stored.result;
  if (!r.spec.dynamic()) return "static";
  std::string cell = "dynamic " + std::to_string(r.spec.dynamic_batch.min) + ".." + std::to_string(r.spec.dynamic_batch.max) +
                     " (opt " + std::to_string(r.spec.dynamic_batch.opt) + ")";
  CaseSpec twin = r.spec;
  twin.engine_shapes = "static";
  twin.dynamic_batch = {};
  const std::string twin_key = twin.case_key();
  for (const ReportCase& c : m.cases) {
    const CaseResult& s = c.stored.result;
    if (c.key != twin_key || s.status == CaseStatus::kError) continue;
    if (s.engine.stats.median > 0 && r.engine.stats.median > 0)
      cell += "; " + format_number("%+.1f%%", 100 * (r.engine.stats.median / s.engine.stats.median - 1)) + " vs static";
    break;
  }
  if (r.specialize_ms) cell += "; new shape " + fmt_ms(*r.specialize_ms) + " ms";
  return cell;
}

void render_case_table(std::ostringstream& o, const ReportModel& m, const std::vector<size_t>& list) {
  const bool any_dynamic =
      std::any_of(m.cases.begin(), m.cases.end(), [](const ReportCase& c) { return c.stored.result.spec.dynamic(); });
  o << "<div class=\"scroll\"><table class=\"full cases\"><thead><tr><th>Case</th><th class=\"num\">Engine ms [95%]</th>"
       "<th class=\"num\">Reference ms [95%]</th><th class=\"num\">Speedup [95%]</th><th>vs baseline (speedup ±noise)</th>"
    << (any_dynamic ? "<th>Engine shapes</th>" : "")
    << "<th class=\"num\">Max abs err</th><th>Gate</th><th>Status</th></tr></thead><tbody>\n";
  for (size_t i : list) {
    const ReportCase& c = m.cases[i];
    const CaseResult& r = c.stored.result;
    const Outcome gate = m.gate.cases[i].outcome;
    const bool bad = r.status != CaseStatus::kPassed || gate == Outcome::kFail ||
                     (c.judgement && c.judgement->verdict == Verdict::kSlower);
    o << "<tr class=\"" << (bad ? "bad" : "") << "\"><td><a class=\"nowrap\" href=\"#" << case_anchor(i) << "\">"
      << html_escape(short_label(r.spec)) << "</a>" << (r.noisy ? " " + badge("noisy", "noisy") : "")
      << (r.disturbed.empty() ? "" : " " + badge("environment", "disturbed"))
      << "</td><td class=\"num\">" << with_ci(r.engine) << "</td><td class=\"num\">" << with_ci(r.reference)
      << "</td><td class=\"num\">" << speedup_with_ci(r) << "</td><td>" << compare_cell(c) << "</td>"
      << (any_dynamic ? "<td>" + html_escape(engine_shapes_cell(m, i)) + "</td>" : "") << "<td class=\"num\">"
      << (r.status == CaseStatus::kError ? kNone : fmt_err(r.accuracy.max_abs_err)) << "</td><td>" << outcome_badge(gate)
      << "</td><td>" << status_badge(r.status) << "</td></tr>\n";
  }
  o << "</tbody></table></div>\n";
}

void render_history(std::ostringstream& o, const ReportModel& m, size_t i) {
  const ReportCase& c = m.cases[i];
  o << "<h4>History</h4>\n";
  if (c.history.points.size() < 2) {
    o << "<p class=\"muted\">" << c.history.points.size()
      << " run in the window: history needs at least two (the last " << m.options.last << " runs are shown).</p>\n";
    return;
  }
  o << "<div class=\"charts\">";
  for (size_t k = 0; k < kMetrics; ++k)
    o << "<svg class=\"chart history\" data-case=\"" << i << "\" data-metric=\"" << k << "\" role=\"img\" aria-label=\""
      << metric_name(Metric(k)) << " history\"></svg>";
  o << "</div>\n<p class=\"muted\">" << c.history.points.size() << " of the last " << m.history_runs.size()
    << " runs; band: each run's 95% interval; hollow points: runs flagged noisy; dashed red lines: change points "
       "(E-divisive, α "
    << format_number("%g", m.options.change_points.alpha) << ", as <code>fusebench history</code> finds them in this window). "
       "Hover a point for its run.</p>\n";
  bool any = false;
  for (size_t k = 0; k < kMetrics; ++k)
    for (const ChangePoint& cp : c.history.changes[k]) {
      if (!any) o << "<ul class=\"changes\">\n";
      any = true;
      const StoredRun& run = m.history_runs[c.history.points[cp.index].run];
      const char* unit = Metric(k) == Metric::kSpeedup ? "×" : " ms";
      o << "<li><b>" << metric_name(Metric(k)) << "</b> " << fmt_pct(cp.step) << " from " << run_link(run) << " (commit "
        << mono(short_commit(run.info.git_commit)) << ", " << mono(run.info.started_at) << "): " << fmt_ms(cp.before) << unit
        << " → " << fmt_ms(cp.after) << unit << ", p=" << format_number("%.3f", cp.p_value) << "</li>\n";
    }
  if (any) o << "</ul>\n";
  else o << "<p>No change point in this window.</p>\n";
}

void render_batch_curve(std::ostringstream& o, const ReportModel& m, size_t i) {
  const CaseSpec& me = m.cases[i].stored.result.spec;
  std::vector<svg::LineSeries> series;
  size_t points = 0;
  const char* colors[] = {"#0969da", "#1a7f37", "#bc4c00", "#8250df", "#cf222e", "#1b7c83", "#9a6700"};
  for (const BatchCurve& bc : m.batch_curves) {
    if (bc.model != me.model || bc.threads != me.threads) continue;
    svg::LineSeries s;
    s.name = bc.name;
    s.color = colors[series.size() % 7];
    for (size_t k : bc.cases) {
      const CaseResult& r = m.cases[k].stored.result;
      if (!(r.speedup > 0) || r.status == CaseStatus::kError) continue;
      s.x.push_back(double(r.spec.batch));
      s.y.push_back(r.speedup);
      s.low.push_back(r.speedup_ci_low);
      s.high.push_back(r.speedup_ci_high);
      s.tips.push_back(r.spec.label() + ": " + format_number("%.2f×", r.speedup) + " [" + format_number("%.2f", r.speedup_ci_low) +
                       ", " + format_number("%.2f", r.speedup_ci_high) + "]");
      s.highlight.push_back(k == i);
    }
    points += s.x.size();
    if (!s.x.empty()) series.push_back(std::move(s));
  }
  o << "<h4>Speedup against batch</h4>\n";
  if (points < 2) {
    o << "<p class=\"muted\">Only one batch size of this model and thread count in the run.</p>\n";
    return;
  }
  bool wide = false;
  double lo = INFINITY, hi = 0;
  for (const auto& s : series)
    for (double x : s.x) lo = std::min(lo, x), hi = std::max(hi, x);
  wide = hi >= 4 * lo;
  o << "<figure>" << svg::line_chart({"speedup against batch per precision and fusion level", "batch", "speedup (×)", wide, 1.0, "1.0× (no faster)"},
                                     series)
    << "<figcaption>This run's speedup (reference median / engine median) of " << html_escape(me.model) << " at "
    << me.threads << " thread(s), one line per precision and fusion level; whiskers: 95% bootstrap interval; the ring "
                     "marks this case.</figcaption></figure>\n";
}

void render_distributions(std::ostringstream& o, const ReportModel& m, const ReportCase& c) {
  const CaseResult& r = c.stored.result;
  std::vector<svg::Box> boxes;
  boxes.push_back({"engine, run " + std::to_string(m.run.id), "#0969da", r.engine.samples_ms});
  if (c.baseline) boxes.push_back({"engine, " + m.baseline_name, "#54aeff", c.baseline->engine.samples_ms});
  boxes.push_back({"reference, run " + std::to_string(m.run.id), "#bc4c00", r.reference.samples_ms});
  if (c.baseline) boxes.push_back({"reference, " + m.baseline_name, "#fb8f44", c.baseline->reference.samples_ms});
  o << "<h4>Latency distributions</h4>\n<figure>"
    << svg::box_plot("latency distributions of the engine and the reference", boxes, "ms per iteration")
    << "<figcaption>Every timed iteration: box from the first to the third quartile, the thick line at the median, "
       "whiskers to the furthest sample within 1.5 IQR.</figcaption></figure>\n";
}

void render_accuracy(std::ostringstream& o, const CaseResult& r) {
  o << "<h4>Accuracy</h4>\n<table class=\"kv\">\n";
  kv_row(o, "Max abs error", "<span class=\"mono\">" + fmt_err(r.accuracy.max_abs_err) + "</span> (atol " +
                                 format_number("%g", r.spec.accuracy.atol) + ")");
  kv_row(o, "Max rel error", "<span class=\"mono\">" + fmt_err(r.accuracy.max_rel_err) + "</span> (rtol " +
                                 format_number("%g", r.spec.accuracy.rtol) + ")");
  kv_row(o, "Cosine", "<span class=\"mono\">" + (std::isnan(r.accuracy.cosine) ? std::string("NaN") : format_number("%.8f", r.accuracy.cosine)) + "</span>");
  kv_row(o, "Within tolerance", r.accuracy.passed ? "yes" : "<b>no</b>");
  if (!r.accuracy.detail.empty()) kv_row(o, "Detail", "<span class=\"wrap\">" + html_escape(r.accuracy.detail) + "</span>");
  o << "</table>\n";
}

std::string sources_cell(const std::vector<std::string>& sources) {
  if (sources.empty()) return kNone;
  if (sources.size() == 1) return "<span class=\"mono wrap\">" + html_escape(sources[0]) + "</span>";
  std::string s = "<details class=\"sources\"><summary>" + std::to_string(sources.size()) + " nodes</summary><ul>";
  for (const std::string& n : sources) s += "<li class=\"mono wrap\">" + html_escape(n) + "</li>";
  return s + "</ul></details>";
}

void render_layer_rows(std::ostringstream& o, const EngineView& v, const std::vector<size_t>& order, size_t visible,
                       bool with_change) {
  for (size_t k = 0; k < order.size(); ++k) {
    const LayerRow& l = v.layers[order[k]];
    o << "<tr" << (k >= visible ? " class=\"more\"" : "") << "><td class=\"num\">" << l.index << "</td><td class=\"mono wrap\">"
      << html_escape(l.name) << "</td><td class=\"mono\">" << html_escape(l.kind) << "</td><td class=\"mono\">"
      << or_none(l.kernel) << "</td><td>" << html_escape(l.precision) << "</td>";
    if (l.profiled)
      o << "<td class=\"num\">" << fmt_ms(l.ms) << "</td><td class=\"num\">" << format_number("%.1f%%", 100 * l.share)
        << "</td><td class=\"num\">" << (l.flops > 0 ? format_number("%.1f", l.gflops) : kNone) << "</td><td class=\"num\">"
        << (l.flops > 0 && l.peak_share > 0 ? format_number("%.1f%%", 100 * l.peak_share) : kNone) << "</td>";
    else
      o << "<td class=\"num\">" << kNone << "</td><td class=\"num\">" << kNone << "</td><td class=\"num\">" << kNone
        << "</td><td class=\"num\">" << kNone << "</td>";
    if (with_change)
      o << "<td class=\"num\">" << (l.baseline_ms ? fmt_ms(*l.baseline_ms) : kNone) << "</td><td class=\"num\">"
        << (l.baseline_ms && *l.baseline_ms > 0 ? fmt_pct(l.ms / *l.baseline_ms - 1) : kNone) << "</td>";
    o << "<td>" << sources_cell(l.sources) << "</td></tr>\n";
  }
}

void render_layer_table(std::ostringstream& o, const EngineView& v, const std::vector<size_t>& order, size_t visible,
                        bool with_change, const std::string& id) {
  o << "<div class=\"scroll\"><table class=\"full layers\" id=\"" << id << "\"><thead><tr><th class=\"num\">#</th>"
    << "<th>Layer</th><th>Kind</th><th>Kernel</th><th>Precision</th><th class=\"num\">ms</th><th class=\"num\">Share</th>"
       "<th class=\"num\">GFLOP/s</th><th class=\"num\">% of peak</th>";
  if (with_change) o << "<th class=\"num\">Baseline ms</th><th class=\"num\">Change</th>";
  o << "<th>Source ONNX nodes</th></tr></thead><tbody>\n";
  render_layer_rows(o, v, order, visible, with_change);
  o << "</tbody></table></div>\n";
  if (order.size() > visible)
    o << "<button class=\"expand\" data-target=\"" << id << "\" data-more=\"Show all " << order.size()
      << " layers\" data-less=\"Show the first " << visible << " only\">Show all " << order.size() << " layers</button>\n";
}

void render_engine(std::ostringstream& o, const ReportModel& m, size_t i) {
  const ReportCase& c = m.cases[i];
  const EngineView& v = c.engine;
  o << "<h4>Engine</h4>\n";
  if (!v.passes.empty()) {
    o << "<p>Fusion, pass by pass (from the build log): ";
    int before = c.stored.result.onnx_nodes;
    for (size_t k = 0; k < v.passes.size(); ++k) {
      const PassSummary& p = v.passes[k];
      if (p.rewrites == 0) continue;
      o << "<span class=\"mono\">" << html_escape(p.pass) << "</span> " << p.rewrites << " rewrites (" << before << " → "
        << p.layers_after << " layers); ";
      before = p.layers_after;
    }
    o << "<b>" << c.stored.result.onnx_nodes << " ONNX nodes → " << v.layers.size() << " engine layers</b>.</p>\n";
  }
  if (v.profile)
    o << "<p class=\"muted\">Layer times from stored profile " << v.profile->id << " (<code>fusebench profile --db</code>, "
      << mono(v.profile->created_at) << ", " << v.profile->profile.iterations << " iterations, "
      << fmt_ms(v.profile->profile.total_ms) << " ms per run summed over layers); peak "
      << format_number("%.1f", v.profile->peaks.gflops) << " GFLOP/s fp32 measured on this machine.</p>\n";
  else
    o << "<p class=\"muted\">No stored profile matches this case (same model, batch, fusion and threads): layer times "
         "come from <code>fusebench profile MODEL --db FILE</code>.</p>\n";
  if (v.layers.empty()) {
    o << "<p class=\"muted\">No layer map recorded.</p>\n";
    return;
  }
  if (v.baseline_profile && v.profile && v.baseline_profile->id != v.profile->id) {
    o << "<p><b>Layers whose time changed most</b> against " << html_escape(m.baseline_name) << "'s profile "
      << v.baseline_profile->id << ":</p>\n";
    if (v.most_changed.empty()) o << "<p class=\"muted\">No layer's time changed by 1% or more.</p>\n";
    else render_layer_table(o, v, v.most_changed, 5, true, "changed-" + std::to_string(i));
  }
  std::vector<size_t> order(v.layers.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  if (v.profile)
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v.layers[a].ms > v.layers[b].ms; });
  o << "<p>" << v.layers.size() << " layers" << (v.profile ? ", slowest first" : ", in engine order") << ":</p>\n";
  render_layer_table(o, v, order, 10, false, "layers-" + std::to_string(i));
  if (!v.modules.empty())
    o << "<figure>" << svg::icicle(v.modules, v.profile->profile.total_ms)
      << "<figcaption>Time per module (the name prefixes the exporter wrote), outermost on top; width is the share of "
         "the run. Hatched and marked est.: includes time apportioned from fused layers by the unfused run's "
         "proportions (an estimate). Hover for figures.</figcaption></figure>\n";
}

// What the case's plugins cost (harness/measure/plugin_cost.h): the end-to-end difference against
// the same model without them, and its split into (a) the plugins' own layers, (b) each
// fusion they prevented, before and after, and (c) the rest.
std::string cost_layers(const std::vector<CostLayer>& layers) {
  std::string s;
  for (const CostLayer& l : layers)
    s += (s.empty() ? "" : ", ") + html_escape(l.kind) + " <span class=\"mono\">" + html_escape(l.name) + "</span> " +
         fmt_ms(l.ms) + " ms";
  return s.empty() ? kNone : s;
}

void render_plugin_cost(std::ostringstream& o, const PluginCost& c) {
  auto ms = [](double v) { return format_number("%+.3f", v) + " ms"; };
  o << "<h4>Plugin cost</h4>\n<p>With the plugins " << fmt_ms(c.with_ms) << " ms, without them " << fmt_ms(c.without_ms)
    << " ms (timed interleaved, " << c.samples << " samples each, " << or_none(c.stop_reason) << "): difference <b>"
    << ms(c.difference_ms) << "</b> <span class=\"ci\">[" << format_number("%+.3f", c.difference_ci_low) << ", "
    << format_number("%+.3f", c.difference_ci_high) << "]</span>.</p>\n<table class=\"full\"><thead><tr><th>Part</th>"
    << "<th class=\"num\">ms</th><th>Layers</th></tr></thead><tbody>\n";
  o << "<tr><td>(a) the plugins' own time</td><td class=\"num\">" << ms(c.plugin_ms) << "</td><td>"
    << cost_layers(c.plugin_layers) << "</td></tr>\n";
  o << "<tr><td>(b) fusions prevented</td><td class=\"num\">" << ms(c.fusion_ms) << "</td><td>" << c.prevented.size()
    << " group(s)</td></tr>\n";
  for (const PreventedFusion& f : c.prevented)
    o << "<tr><td class=\"mono wrap\">&nbsp;&nbsp;" << html_escape(f.name) << "</td><td class=\"num\">" << ms(f.delta_ms())
      << "</td><td>before " << fmt_ms(f.before_ms) << " ms in " << f.before.size() << " layer(s): " << cost_layers(f.before)
      << "<br>after " << fmt_ms(f.after_ms) << " ms in " << f.after.size() << " layer(s): " << cost_layers(f.after)
      << "</td></tr>\n";
  o << "<tr><td>(c) the rest (layers in both builds)</td><td class=\"num\">" << ms(c.rest_ms) << "</td><td></td></tr>\n";
  o << "<tr><td>unattributed</td><td class=\"num\">" << ms(c.unattributed_ms) << "</td><td>a + b + c "
    << (c.within_interval ? "lies within" : "lies outside") << " the difference's interval</td></tr>\n</tbody></table>\n";
}

void render_conditions(std::ostringstream& o, const CaseResult& r) {
  const Interference& in = r.interference;
  o << "<h4>Timing</h4>\n<table class=\"kv\">\n";
  kv_row(o, "Case key", mono(r.spec.case_key()));
  kv_row(o, "Model", "<span class=\"mono wrap\">" + or_none(r.spec.model) + "</span>");
  kv_row(o, "Samples", std::to_string(r.engine.samples_ms.size()) + " engine, " + std::to_string(r.reference.samples_ms.size()) +
                           " reference; stopped: " + or_none(r.stop_reason) + (r.noisy ? " (noisy)" : ""));
  kv_row(o, "Noise", "engine " + noise_of(r.engine) + "; reference " + noise_of(r.reference));
  kv_row(o, "Conditions", "<span class=\"mono\">load " + format_number("%.2f", in.load_before) + " → " +
                              format_number("%.2f", in.load_after) + "; other processes' CPU " +
                              format_number("%.0f ms", in.other_cpu_ms) + " in " + format_number("%.0f ms", in.timed_wall_ms) +
                              "; clock " + format_number("%.0f", in.cpu_mhz_before) + " → " +
                              format_number("%.0f MHz", in.cpu_mhz_after) + "; pinned " + or_none(r.pinned_cpus) +
                              "; steal " + format_number("%.0f ms", in.steal_ms) + "; run queue up to " +
                              std::to_string(in.run_queue) + "; " + std::to_string(in.involuntary_switches) +
                              " involuntary context switches</span>");
  if (!r.disturbed.empty() || r.retimed_processes > 0)
    kv_row(o, "Disturbed", html_escape(r.disturbed.empty() ? "no (after re-timing)" : r.disturbed) + "; " +
                               std::to_string(r.retimed_processes) + " worker process(es) timed again");
  kv_row(o, "Build", fmt_ms(r.build_ms) + " ms" +
                         (r.specialize_ms ? "; first run at a new shape " + fmt_ms(*r.specialize_ms) + " ms" : "") +
                         "; activation memory " +
                         format_number("%.2f MiB", double(r.engine_memory_bytes) / (1024.0 * 1024.0)) + " engine, " +
                         format_number("%.2f MiB", double(r.reference_memory_bytes) / (1024.0 * 1024.0)) + " reference");
  if (!r.error.empty()) kv_row(o, "Error", "<span class=\"mono wrap\">" + html_escape(r.error) + "</span>");
  o << "</table>\n";
  if (!r.build_log.empty())
    o << "<details class=\"log\"><summary>Build log</summary><pre>" << html_escape(r.build_log) << "</pre></details>\n";
}

void render_case(std::ostringstream& o, const ReportModel& m, size_t i) {
  const ReportCase& c = m.cases[i];
  const CaseResult& r = c.stored.result;
  o << "<details class=\"case\" id=\"" << case_anchor(i) << "\"><summary>" << html_escape(short_label(r.spec))
    << " <span class=\"muted\">status</span> " << status_badge(r.status) << " <span class=\"muted\">gate</span> "
    << outcome_badge(m.gate.cases[i].outcome) << " <span class=\"muted\">vs baseline</span> " << compare_cell(c)
    << (r.noisy ? " " + badge("noisy", "timing noisy") : "")
    << (r.disturbed.empty() ? "" : " " + badge("environment", "disturbed")) << "</summary>\n";
  render_history(o, m, i);
  render_batch_curve(o, m, i);
  if (r.status != CaseStatus::kError && r.load) o << load_section_html(r);
  if (r.status != CaseStatus::kError) {
    if (!r.load) render_distributions(o, m, c);  // a load case has no reference timed beside it
    render_accuracy(o, r);
  }
  if (r.plugin_cost) render_plugin_cost(o, *r.plugin_cost);
  render_engine(o, m, i);
  render_conditions(o, r);
  o << "</details>\n";
}

void render_runs(std::ostringstream& o, const ReportModel& m) {
  o << "<section id=\"runs\"><h2>Runs in the history window</h2>\n<p class=\"muted\">The last "
    << m.history_runs.size() << " runs up to run " << m.run.id << " (<code>--last " << m.options.last
    << "</code>), newest first.</p>\n<div class=\"scroll\"><table class=\"full\"><thead><tr><th>Run</th><th>Started</th>"
       "<th>Commit</th><th>Host</th><th class=\"num\">Cases</th><th>Finished</th></tr></thead><tbody>\n";
  for (auto it = m.history_runs.rbegin(); it != m.history_runs.rend(); ++it) {
    const StoredRun& r = *it;
    o << "<tr id=\"run-" << r.id << "\"><td>" << r.id << (r.id == m.run.id ? " (this run)" : "")
      << (m.baseline && r.id == m.baseline->id && m.baseline_name == "run " + std::to_string(r.id) ? " (baseline)" : "")
      << "</td><td class=\"mono\">" << or_none(r.info.started_at) << "</td><td class=\"mono\">"
      << or_none(short_commit(r.info.git_commit)) << (r.info.git_dirty ? " dirty" : "") << "</td><td>" << or_none(r.info.host)
      << "</td><td class=\"num\">" << r.case_count << "</td><td class=\"mono\">"
      << (r.finished_at.empty() ? std::string("not finished") : html_escape(r.finished_at)) << "</td></tr>\n";
  }
  o << "</tbody></table></div>\n</section>\n";
}

// A number for the chart data, to 5 significant digits (plenty for a plot); null when absent.
json chart_number(double v) {
  if (!std::isfinite(v)) return nullptr;
  return std::strtod(format_number("%.5g", v).c_str(), nullptr);
}

// What the history charts read: the runs once, then per case its points and change points.
json chart_data(const ReportModel& m) {
  json runs = json::array();
  for (const StoredRun& r : m.history_runs)
    runs.push_back({r.id, r.info.started_at, short_commit(r.info.git_commit), r.info.host});
  json cases = json::array();
  for (const ReportCase& c : m.cases) {
    json points = json::array();
    for (const HistoryPoint& p : c.history.points) {
      json row = json::array({p.run});
      for (size_t k = 0; k < kMetrics; ++k) {
        row.push_back(chart_number(p.value[k]));
        row.push_back(chart_number(p.low[k]));
        row.push_back(chart_number(p.high[k]));
      }
      row.push_back(p.noisy ? 1 : 0);
      points.push_back(std::move(row));
    }
    json changes = json::array();
    for (size_t k = 0; k < kMetrics; ++k)
      for (const ChangePoint& cp : c.history.changes[k]) changes.push_back({k, cp.index, chart_number(cp.step), cp.p_value});
    cases.push_back({{"label", c.stored.result.spec.label()}, {"points", std::move(points)}, {"changes", std::move(changes)}});
  }
  return {{"runs", std::move(runs)}, {"cases", std::move(cases)}};
}


}  // namespace

void HtmlReporter::begin_run(const ReportModel& m) {
  if (model_) throw Error("an HTML report shows one run");
  model_ = &m;
  const RunInfo& i = m.run.info;
  std::ostringstream& o = page_;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    // Nothing may load from anywhere: the page is one file, read offline.
    << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
       "script-src 'unsafe-inline'; img-src data:\">\n"
    << "<title>fusebench report — run " << m.run.id << " (" << html_escape(i.started_at) << ")</title>\n<style>"
    << kReportCss << "</style>\n</head>\n<body>\n";
  o << "<header><h1>fusebench report — run " << m.run.id << "</h1><p class=\"muted\">Started " << mono(i.started_at)
    << ", commit " << mono(short_commit(i.git_commit)) << (i.git_dirty ? " (dirty)" : "") << ", host " << or_none(i.host)
    << ", " << m.cases.size() << " cases · database <code class=\"wrap\">" << html_escape(m.db_path) << "</code>"
    << (m.baseline ? " · baseline " + html_escape(m.baseline_name) : std::string(" · no baseline")) << "</p></header>\n";
  render_banner(o, m);

  // Scenarios in the order their first case was stored.
  for (const ReportCase& c : m.cases)
    if (scenario_index_.emplace(c.stored.result.spec.scenario, scenarios_.size()).second)
      scenarios_.push_back(c.stored.result.spec.scenario);
  scenario_cases_.resize(scenarios_.size());
  case_sections_.resize(scenarios_.size());
  o << "<nav class=\"toc\"><a href=\"#verdicts\">Verdicts</a><a href=\"#environment\">Environment</a>";
  for (size_t k = 0; k < scenarios_.size(); ++k)
    o << "<a href=\"#scenario-" << k << "\">" << html_escape(scenarios_[k].empty() ? "(unnamed)" : scenarios_[k]) << "</a>";
  o << "<a href=\"#runs\">Runs</a></nav>\n";

  render_verdicts(o, m);
  render_explanations(o, m);
  render_environment(o, m);
}

void HtmlReporter::each_case(const ReportModel& m, size_t c) {
  const size_t k = scenario_index_.at(m.cases[c].stored.result.spec.scenario);
  scenario_cases_[k].push_back(c);
  render_case(case_sections_[k], m, c);
}

void HtmlReporter::end() {
  if (!model_) throw Error("an HTML report needs a run");
  const ReportModel& m = *model_;
  std::ostringstream& o = page_;
  for (size_t k = 0; k < scenarios_.size(); ++k) {
    const std::vector<size_t>& list = scenario_cases_[k];
    if (list.empty()) continue;
    const CaseSpec& first = m.cases[list.front()].stored.result.spec;
    o << "<section class=\"scenario\" id=\"scenario-" << k << "\">\n<h2>Scenario " << html_escape(scenarios_[k].empty() ? "(unnamed)" : scenarios_[k])
      << "</h2>\n<p class=\"muted\">Model <code class=\"wrap\">" << html_escape(first.model) << "</code>";
    if (!first.scenario_file.empty()) o << " · file <code class=\"wrap\">" << html_escape(first.scenario_file) << "</code>";
    o << ". Open a case for its history, distributions and engine view.</p>\n";
    render_case_table(o, m, list);
    o << case_sections_[k].str();
    o << "</section>\n";
  }
  if (m.cases.empty()) o << "<p class=\"muted\">This run has no stored cases.</p>\n";
  render_runs(o, m);
  o << "<footer>Generated by fusebench " << html_escape(m.run.info.fusebench_version) << " from <code>" << html_escape(m.db_path)
    << "</code>.</footer>\n";
  o << "<script type=\"application/json\" id=\"fb-data\">" << json_for_script(chart_data(m)) << "</script>\n";
  o << "<script>" << kReportJs << "</script>\n</body>\n</html>\n";
  out_ << o.str();
}

std::string render_html_report(const ReportModel& m) {
  std::ostringstream o;
  HtmlReporter reporter(o);
  show_run(reporter, m);
  reporter.end();
  return o.str();
}

std::string render_html_report(const ResultStore& store, std::optional<int64_t> run_id) {
  ReportOptions options;
  options.run = run_id;
  return render_html_report(build_report_model(store, options));
}

void write_html_report(const ReportModel& model, const std::string& out_path) {
  write_file_atomically(out_path, render_html_report(model), "the report");  // render first: no file on failure
}

void write_html_report(const ResultStore& store, const std::string& out_path, std::optional<int64_t> run_id) {
  write_file_atomically(out_path, render_html_report(store, run_id), "the report");
}

}  // namespace fb
