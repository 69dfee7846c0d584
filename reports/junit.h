// JUnit XML of a gate verdict, the format CI systems (GitLab, Jenkins, GitHub actions)
// display as test results: one test case per benchmark case, a failing rule as <failure>,
// an errored case as <error>, an inconclusive one as <skipped>.
#pragma once
#include <string>

#include "harness/judge/gate.h"

namespace fb {

std::string render_junit(const GateReport& report);
// Writes through a temporary file, so CI never reads half a report; fb::Error naming the path.
void write_junit(const GateReport& report, const std::string& path);
// Escapes & < > " ' and drops characters XML 1.0 does not allow (control characters).
std::string xml_escape(const std::string& s);

}  // namespace fb
