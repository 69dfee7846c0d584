// Reductions (ReduceMean, ReduceSum, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
// ReduceLogSum, ReduceLogSumExp, ReduceSumSquare), accumulated in double for every
// numeric type (16-bit floats widened).
// Axes come from the attribute (opset < 13 for ReduceSum, < 18 for the others) or the
// second input; the input is viewed as [outer, reduced, inner] when the reduced axes
// are contiguous, and walked index by index otherwise.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <cmath>
#include <limits>

#include "engine/ops/op_registry.h"
#include "engine/ops/typed_kernels.h"

namespace fb {

namespace {

enum class ReduceKind { Mean, Sum, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

ReduceKind kind_of(const std::string& op) {
  if (op == "ReduceMean") return ReduceKind::Mean;
  if (op == "ReduceSum") return ReduceKind::Sum;
  if (op == "ReduceMax") return ReduceKind::Max;
  if (op == "ReduceMin") return ReduceKind::Min;
  if (op == "ReduceProd") return ReduceKind::Prod;
  if (op == "ReduceL1") return ReduceKind::L1;
  if (op == "ReduceLogSum") return ReduceKind::LogSum;
  if (op == "ReduceLogSumExp") return ReduceKind::LogSumExp;
  if (op == "ReduceSumSquare") return ReduceKind::SumSquare;
  return ReduceKind::L2;
}

// The reduced axes (normalized, sorted), empty meaning "all" unless noop_with_empty_axes.
std::vector<int64_t> reduce_axes(const Node& n, const Tensor* axes_input, int64_t rank, bool* noop) {
  std::vector<int64_t> axes = axes_input ? axes_input->as_int64_vector() : n.attr_ints("axes");
  *noop = axes.empty() && n.attr_int("noop_with_empty_axes", 0) != 0;
  if (axes.empty() && !*noop)
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  for (int64_t& a : axes) a = normalize_axis(a, rank);
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

Shape reduced_shape(const Shape& in, const std::vector<int64_t>& axes, bool keepdims) {
  Shape out;
  for (int64_t d = 0; d < int64_t(in.size()); ++d) {
    bool red = std::binary_search(axes.begin(), axes.end(), d);
    if (!red) out.push_back(in[d]);
    else if (keepdims) out.push_back(1);
  }
  return out;
}

std::vector<ValueInfo> infer_reduce(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  const Tensor* axes_t = c.has_input(1) ? &c.constant(1, "axes") : nullptr;
  bool noop = false;
  auto axes = reduce_axes(c.node, axes_t, int64_t(x.shape.size()), &noop);
  if (noop) return {ValueInfo{x.dtype, x.shape, true}};
  return {ValueInfo{x.dtype, reduced_shape(x.shape, axes, c.node.attr_int("keepdims", 1) != 0), true}};
}

struct Acc {
  ReduceKind k;
  double init() const {
    switch (k) {
      case ReduceKind::Max: return -std::numeric_limits<double>::infinity();
      case ReduceKind::Min: return std::numeric_limits<double>::infinity();
      case ReduceKind::Prod: return 1.0;
      default: return 0.0;
    }
  }
  double add(double acc, double v) const {
    switch (k) {
      case ReduceKind::Max: return std::max(acc, v);
      case ReduceKind::Min: return std::min(acc, v);
      case ReduceKind::Prod: return acc * v;
      case ReduceKind::L2: case ReduceKind::SumSquare: return acc + v * v;
      case ReduceKind::L1: return acc + std::fabs(v);
      case ReduceKind::LogSumExp: return acc + std::exp(v);
      default: return acc + v;
    }
  }
  double finish(double acc, int64_t count) const {
    if (k == ReduceKind::Mean) return count ? acc / double(count) : 0.0;
    if (k == ReduceKind::L2) return std::sqrt(acc);
    if (k == ReduceKind::LogSum || k == ReduceKind::LogSumExp) return std::log(acc);
    return acc;
  }
};

template <typename T>
void reduce_typed(const Tensor& x, const std::vector<int64_t>& axes, Acc acc, Tensor& out) {
  const Shape& s = x.shape();
  const int64_t rank = int64_t(s.size());
  const T* in = x.data<T>();
  T* o = out.data<T>();
  bool contiguous = !axes.empty() && axes.back() - axes.front() + 1 == int64_t(axes.size());
  if (contiguous) {
    int64_t outer = 1, red = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d) {
      if (d < axes.front()) outer *= s[d];
      else if (d <= axes.back()) red *= s[d];
      else inner *= s[d];
    }
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, outer * inner, std::max<int64_t>(1, 4096 / std::max<int64_t>(red, 1))),
                      [&](const tbb::blocked_range<int64_t>& r) {
                        for (int64_t idx = r.begin(); idx < r.end(); ++idx) {
                          int64_t oi = idx / inner, ii = idx % inner;
                          const T* base = in + oi * red * inner + ii;
                          double a = acc.init();
                          for (int64_t j = 0; j < red; ++j) a = acc.add(a, double(base[j * inner]));
                          o[idx] = T(acc.finish(a, red));
                        }
                      });
    return;
  }
  // General case: walk every input element and accumulate into its output slot.
  std::vector<double> accum(size_t(out.numel()), acc.init());
  std::vector<int64_t> out_stride(rank, 0);
  {
    int64_t st = 1;
    for (int64_t d = rank; d-- > 0;) {
      if (std::binary_search(axes.begin(), axes.end(), d)) continue;
      out_stride[d] = st;
      st *= s[d];
    }
  }
  std::vector<int64_t> idx(rank, 0);
  int64_t count = 1;
  for (int64_t a : axes) count *= s[a];
  for (int64_t i = 0, n = x.numel(); i < n; ++i) {
    int64_t oi = 0;
    for (int64_t d = 0; d < rank; ++d) oi += idx[d] * out_stride[d];
    accum[oi] = acc.add(accum[oi], double(in[i]));
    for (int64_t d = rank; d-- > 0;) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
  for (size_t i = 0; i < accum.size(); ++i) o[i] = T(acc.finish(accum[i], count));
}

void compute_reduce(OpContext& c) {
  if (run_widened(c, compute_reduce)) return;
  const Tensor& x = c.in(0);
  bool noop = false;
  auto axes = reduce_axes(c.node, c.has_input(1) ? &c.in(1) : nullptr, x.rank(), &noop);
  Tensor& out = c.out(0);
  if (noop) {
    std::memcpy(out.raw(), x.raw(), x.nbytes());
    return;
  }
  Acc acc{kind_of(c.node.op_type)};
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) throw Error("input type bool is not supported");
    else reduce_typed<T>(x, axes, acc, out);
  });
}

}  // namespace

void register_reduce_ops(OpRegistry& r) {
  for (const char* op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"})
    r.add(with_shape_inputs(OpDef{"", op, infer_reduce, compute_reduce}, {1}));  // axes (ReduceSum 13, all 18)
}

}  // namespace fb
