#include "reports/reporter.h"

namespace fb {

void show_run(Reporter& reporter, const ReportModel& model) {
  reporter.begin_run(model);
  for (size_t i = 0; i < model.cases.size(); ++i) reporter.each_case(model, i);
}

}  // namespace fb
