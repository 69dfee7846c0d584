// Engine outputs against reference outputs. A float element passes when
// |engine - reference| <= atol + rtol·|reference| (numpy's allclose; unless the config
// turns the elementwise check off), the cosine similarity over all float outputs must
// reach min_cosine when one is set, and integer and boolean outputs must match exactly.
// Reports max abs error, max relative error and the cosine similarity.
#pragma once
#include <vector>

#include "engine/ir/tensor.h"
#include "harness/cases/case.h"

namespace fb {

// The tolerance a case of this precision gets when its scenario names none: fp32 the
// elementwise 1e-4 / 1e-3 on the CPU, and on a device the device reference's own agreement
// below (the expected outputs are the CPU reference's, summed in oneDNN's order); bf16 and
// fp16 cosine >= 0.999, int8 cosine >= 0.99 (the bars of issue 12), without an elementwise
// check, since 16-bit rounding alone moves a value by 2^-8 of itself in bf16.
AccuracyConfig default_accuracy(Precision precision, const std::string& device = "cpu");

// How closely a device's eager fp32 reference must agree with the CPU's: both are fp32 in
// different summation orders (cuBLAS's and cuDNN's against oneDNN's), which across a deep
// model moves small elements by about 1e-4 (BERT-base, 12 layers, and the 4-layer BERT at
// batch 32 on an H200: 1.2e-4 at elements near 2e-3); elementwise 1e-3 / 1e-3 with cosine
// >= 0.99999 still catches a wrong kernel, whose errors are of the values' own size. The
// engine's fp32 layers on the device sum in cuBLAS's and cuDNN's orders too, so an fp32 case
// on a device is held to the same agreement unless its scenario names a tolerance.
AccuracyConfig device_reference_agreement();

AccuracyResult compare_outputs(const std::vector<Tensor>& engine, const std::vector<Tensor>& reference,
                               const std::vector<std::string>& names, const AccuracyConfig& tol);

}  // namespace fb
