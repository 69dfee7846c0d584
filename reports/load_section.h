// A load case's part of the report (harness/load/load_settings.h): latency against rate (a server
// peak search's every step, or the one run at its rate), the per-query latency distribution
// of each step, and the table of the steps' figures with their validity.
#pragma once
#include <string>

#include "harness/cases/case.h"

namespace fb {

std::string load_section_html(const CaseResult& r);

}  // namespace fb
