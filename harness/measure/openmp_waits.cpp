#include "harness/measure/openmp_waits.h"

#include <cstdlib>

namespace fb {

std::string stop_openmp_spin_for_busy_machine() {
  if (std::getenv(kOpenmpWaitsEnv) == nullptr) return "";
  setenv("GOMP_SPINCOUNT", "0", 1);
  return "the workers' OpenMP threads will not spin between parallel regions (GOMP_SPINCOUNT=0): a spinning "
         "thread waits on a descheduled one on a busy machine (the run stores the waits it used)";
}

std::string openmp_waits() {
  std::string out;
  for (const char* name : {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"})
    if (const char* v = std::getenv(name)) out += (out.empty() ? "" : " ") + std::string(name) + "=" + v;
  return out.empty() ? "OpenMP defaults" : out;
}

}  // namespace fb
