#include "engine/runtime/thread_scope.h"

#include <omp.h>

namespace fb {

void set_openmp_threads(int threads) { omp_set_num_threads(threads); }

}  // namespace fb
