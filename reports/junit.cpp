#include "reports/junit.h"

#include <cmath>
#include <cstring>
#include <sstream>

#include "engine/ir/error.h"
#include "harness/util/atomic_file.h"
#include "harness/util/format_number.h"

namespace fb {

std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (c < 0x20 && ch != '\n' && ch != '\t' && ch != '\r') break;  // not allowed in XML 1.0
        out += ch;
    }
  }
  return out;
}

void JUnitReporter::begin_run(const ReportModel& model) {
  suites_.emplace_back();
  suites_.back().name = "fusebench gate (run " + std::to_string(model.gate.run_id) + ")";
}

void JUnitReporter::each_case(const ReportModel& model, size_t i) {
  if (i >= model.gate.cases.size()) return;  // a run the gate did not judge has no test cases
  const CaseVerdict& v = model.gate.cases[i];
  Suite& suite = suites_.back();
  ++suite.tests;
  if (v.result.status == CaseStatus::kError) ++suite.errors;
  else if (v.outcome == Outcome::kFail) ++suite.failures;
  else if (v.outcome == Outcome::kInconclusive) ++suite.skipped;
  std::ostringstream o;
  const CaseSpec& s = v.result.spec;
  // time: the engine's median per iteration, the figure the case is about.
  const std::string time =
      format_number("%.6f", std::isfinite(v.result.engine.stats.median) ? v.result.engine.stats.median / 1000 : 0.0);
  o << "    <testcase classname=\"fusebench." << xml_escape(s.scenario) << "\" name=\""
    << xml_escape(s.label() + " [" + v.case_key + "]") << "\" time=\"" << time << "\">\n";
  std::string all;
  for (const RuleResult& rr : v.rules) all += rr.rule + ": " + std::string(outcome_name(rr.outcome)) + " — " + rr.detail + "\n";
  for (const RuleResult& rr : v.rules) {
    if (rr.outcome == Outcome::kPass) continue;
    const char* tag = v.result.status == CaseStatus::kError ? "error"
                      : rr.outcome == Outcome::kFail ? "failure"
                                                     : "skipped";
    o << "      <" << tag << " message=\"" << xml_escape(rr.rule + ": " + rr.detail) << "\"";
    if (std::strcmp(tag, "skipped") == 0) {
      o << "/>\n";
    } else {
      o << " type=\"" << xml_escape(rr.rule) << "\">" << xml_escape(all) << "</" << tag << ">\n";
    }
    break;  // one element per test case: the first rule that did not pass; the text lists them all
  }
  if (!all.empty()) o << "      <system-out>" << xml_escape(all) << "</system-out>\n";
  o << "    </testcase>\n";
  suite.testcases += o.str();
}

void JUnitReporter::end() {
  Suite total;
  total.name = suites_.size() == 1 ? suites_.front().name : "fusebench gate";
  for (const Suite& s : suites_) {
    total.tests += s.tests;
    total.failures += s.failures;
    total.errors += s.errors;
    total.skipped += s.skipped;
  }
  const auto counts = [](const Suite& s) {
    return "name=\"" + xml_escape(s.name) + "\" tests=\"" + std::to_string(s.tests) + "\" failures=\"" +
           std::to_string(s.failures) + "\" errors=\"" + std::to_string(s.errors) + "\" skipped=\"" +
           std::to_string(s.skipped) + "\"";
  };
  out_ << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out_ << "<testsuites " << counts(total) << ">\n";
  for (const Suite& s : suites_) out_ << "  <testsuite " << counts(s) << ">\n" << s.testcases << "  </testsuite>\n";
  out_ << "</testsuites>\n";
}

std::string render_junit(const GateReport& gate) {
  std::ostringstream o;
  JUnitReporter reporter(o);
  show_run(reporter, gate_model(gate));
  reporter.end();
  return o.str();
}

void write_junit(const GateReport& report, const std::string& path) {
  write_file_atomically(path, render_junit(report), "JUnit XML");
}

}  // namespace fb
