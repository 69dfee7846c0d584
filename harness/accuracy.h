// Engine outputs against reference outputs. A float element passes when
// |engine - reference| <= atol + rtol·|reference| (numpy's allclose; unless the config
// turns the elementwise check off), the cosine similarity over all float outputs must
// reach min_cosine when one is set, and integer and boolean outputs must match exactly.
// Reports max abs error, max relative error and the cosine similarity.
#pragma once
#include <vector>

#include "engine/ir/tensor.h"
#include "harness/case.h"

namespace fb {

// The tolerance a case of this precision gets when its scenario names none: fp32 the
// elementwise 1e-4 / 1e-3; bf16 and fp16 cosine >= 0.999, int8 cosine >= 0.99 (the bars of
// issue 12), without an elementwise check, since 16-bit rounding alone moves a value by
// 2^-8 of itself in bf16.
AccuracyConfig default_accuracy(const std::string& precision);

AccuracyResult compare_outputs(const std::vector<Tensor>& engine, const std::vector<Tensor>& reference,
                               const std::vector<std::string>& names, const AccuracyConfig& tol);

}  // namespace fb
