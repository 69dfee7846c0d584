#include "reports/junit.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/ir/error.h"
#include "harness/util/atomic_file.h"

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

std::string render_junit(const GateReport& report) {
  int errors = 0, failures = 0, skipped = 0;
  for (const CaseVerdict& v : report.cases) {
    if (v.result.status == CaseStatus::kError) ++errors;
    else if (v.outcome == Outcome::kFail) ++failures;
    else if (v.outcome == Outcome::kInconclusive) ++skipped;
  }
  std::ostringstream o;
  const std::string name = "fusebench gate (run " + std::to_string(report.run_id) + ")";
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o << "<testsuites name=\"" << xml_escape(name) << "\" tests=\"" << report.cases.size() << "\" failures=\""
    << failures << "\" errors=\"" << errors << "\" skipped=\"" << skipped << "\">\n";
  o << "  <testsuite name=\"" << xml_escape(name) << "\" tests=\"" << report.cases.size() << "\" failures=\""
    << failures << "\" errors=\"" << errors << "\" skipped=\"" << skipped << "\">\n";
  for (const CaseVerdict& v : report.cases) {
    const CaseSpec& s = v.result.spec;
    // time: the engine's median per iteration, the figure the case is about.
    char time[32];
    std::snprintf(time, sizeof time, "%.6f", std::isfinite(v.result.engine.stats.median) ? v.result.engine.stats.median / 1000 : 0.0);
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
  }
  o << "  </testsuite>\n</testsuites>\n";
  return o.str();
}

void write_junit(const GateReport& report, const std::string& path) {
  write_file_atomically(path, render_junit(report), "JUnit XML");
}

}  // namespace fb
