// The variadic elementwise ops Sum, Mean, Min and Max: one or more inputs broadcast
// together (numpy rules) and folded pairwise into the output. Min and Max with two
// float32 inputs are also rows of the binary table, so the chain fusion can take them.
#include <cstring>

#include "engine/ops/elementwise.h"
#include "engine/ops/typed_kernels.h"

namespace fb {

namespace {

std::vector<ValueInfo> infer_variadic(const ShapeContext& c) {
  if (c.inputs.empty()) throw Error("needs at least one input");
  return {ValueInfo{c.in(0).dtype, broadcast_all(c), true}};
}

void compute_variadic(OpContext& c) {
  if (run_widened(c, compute_variadic)) return;
  const std::string& op = c.node.op_type;
  const BinaryFn f = op == "Min" ? BinaryFn::Min : op == "Max" ? BinaryFn::Max : BinaryFn::Add;
  Tensor& out = c.out(0);
  const size_t n = c.inputs.size();
  if (n == 1) {
    std::memcpy(out.raw(), c.in(0).raw(), out.nbytes());
  } else {
    // out = in0 ⊕ in1, then out = out ⊕ ink: out already has the full shape, so each step
    // reads and writes the same element and can run in place.
    binary_tensor(f, c.in(0), c.in(1), out);
    for (size_t k = 2; k < n; ++k) binary_tensor(f, out, c.in(k), out);
  }
  if (op == "Mean") {
    visit_dtype(out.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, bool>) {
        throw Error("Mean on bool is not supported");
      } else {
        T* o = out.data<T>();
        for (int64_t i = 0, m = out.numel(); i < m; ++i) o[i] = T(o[i] / T(n));
      }
    });
  }
}

}  // namespace

void register_variadic_ops(OpRegistry& r) {
  r.add(OpDef{"", "Min", infer_variadic, compute_variadic, /*elementwise=*/true, false});
  r.add(OpDef{"", "Max", infer_variadic, compute_variadic, true, false});
  r.add(OpDef{"", "Sum", infer_variadic, compute_variadic});
  r.add(OpDef{"", "Mean", infer_variadic, compute_variadic});
}

}  // namespace fb
