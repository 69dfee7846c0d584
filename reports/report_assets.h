// The report page's style sheet and script (reports/assets/), compiled in so a report is
// one self-contained file.
#pragma once

namespace fb {

extern const char* const kReportCss;
extern const char* const kReportJs;

}  // namespace fb
