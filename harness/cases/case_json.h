// CaseResult as JSON, complete and round-tripping: case_result_from_json(case_result_to_json(r))
// == r for every field, samples and their worker-process indices included. It is how a
// result crosses a process boundary: a timing worker sends its samples to the runner, an
// MPI rank sends its cases to rank 0. Doubles without a JSON number (NaN, infinities) are
// written as null / "inf" / "-inf" and read back as such.
#pragma once
#include <nlohmann/json.hpp>

#include "harness/cases/case.h"

namespace fb {

// The document's version; from_json refuses a newer one by name rather than misread it.
constexpr int kCaseResultJsonVersion = 1;

nlohmann::json case_result_to_json(const CaseResult& r);

// The inverse. Missing keys keep their defaults; a key of the wrong type, a samples list
// whose process indices do not match it, or a newer version is an fb::Error naming the
// field ("case result: field 'engine.samples_ms[3]' must be a number, got \"x\"").
CaseResult case_result_from_json(const nlohmann::json& j);

}  // namespace fb
