// `fusebench debug precision`: where reduced precision breaks a model, and what to keep in
// fp32 so that it does not. Two answers, as a user debugging a bf16 or fp16 build asks them:
//  - per layer: the engine built with every tensor kept (mark-all) against the fp32
//    reference, tensor by tensor in the order the engine computes them, naming the first
//    one whose error exceeds the tolerance;
//  - a set of nodes to keep in fp32, found by bisection over the nodes in topological
//    order, so that the outputs meet the tolerance (printed as a scenario override block).
#pragma once
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "harness/cases/case.h"

namespace fb {

// One kept tensor of the mark-all engine against the reference's value of the same name.
struct TensorError {
  std::string tensor;
  std::string layer;      // the engine layer that wrote it
  std::string precision;  // what that layer ran in
  AccuracyResult accuracy;
};

// The smallest-found set of items (indices in 0..n-1, ascending) for which `meets` holds,
// by repeated bisection: while the set fails, the shortest prefix of the remaining items
// that makes it pass is found by binary search, and its last item joins the set; a final
// pass drops every item the others do not need. Assumes that adding items never hurts
// (more fp32 is never less accurate), which holds up to rounding. `meets({})` is asked
// first; nullopt if even every item together fails. `checks` counts the calls of `meets`.
std::optional<std::vector<size_t>> bisect_needed_items(size_t n,
                                                       const std::function<bool(const std::vector<size_t>&)>& meets,
                                                       int* checks = nullptr);

}  // namespace fb
