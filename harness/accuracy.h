// Engine outputs against reference outputs. A float element passes when
// |engine - reference| <= atol + rtol·|reference| (numpy's allclose); integer and
// boolean outputs must match exactly. Reports max abs error, max relative error and the
// cosine similarity over all float outputs.
#pragma once
#include <vector>

#include "engine/ir/tensor.h"
#include "harness/case.h"

namespace fb {

AccuracyResult compare_outputs(const std::vector<Tensor>& engine, const std::vector<Tensor>& reference,
                               const std::vector<std::string>& names, const AccuracyConfig& tol);

}  // namespace fb
