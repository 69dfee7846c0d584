// Loss functions: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (with its
// optional log_prob output), with class weights, ignore_index and the none/sum/mean
// reductions; mean divides by the summed weights of the targets not ignored.
#include <cmath>

#include "engine/ops/nn_common.h"

namespace fb {

namespace {

std::string reduction_of(const Node& n) {
  const std::string r = n.attr_string("reduction", "mean");
  if (r != "none" && r != "sum" && r != "mean") throw Error(n.describe() + ": unsupported reduction '" + r + "'");
  return r;
}

// Checks input [N, C, d...] against target [N, d...] and weight [C]; returns the loss shape.
Shape loss_shape(const Node& n, const ValueInfo& input, const ValueInfo& target, const ValueInfo* weight) {
  if (input.dtype != DType::Float32 && input.dtype != DType::Float64)
    throw Error(n.describe() + ": input type " + dtype_name(input.dtype) + " is not supported");
  if (target.dtype != DType::Int64 && target.dtype != DType::Int32)
    throw Error(n.describe() + ": target type " + dtype_name(target.dtype) + " is not supported");
  require_rank_at_least(n, input.shape, 2, "input");
  Shape expect(input.shape);
  expect.erase(expect.begin() + 1);
  if (target.shape != expect)
    throw Error(n.describe() + ": target " + shape_str(target.shape) + " must be " + shape_str(expect) + " for input " + shape_str(input.shape));
  if (weight && (weight->shape != Shape{input.shape[1]} || weight->dtype != input.dtype))
    throw Error(n.describe() + ": weight must be [" + std::to_string(input.shape[1]) + "] of the input's type");
  return reduction_of(n) == "none" ? expect : Shape{};
}

// loss = -logp[n, t, d] * w[t], reduced. `logp` is [N, C, D] flattened.
template <typename T>
void nll(const Node& n, const T* logp, const std::vector<int64_t>& target, const T* weight, int64_t batch, int64_t classes,
         int64_t inner, T* out) {
  const int64_t ignore = n.attr_int("ignore_index", INT64_MIN);
  const bool has_ignore = n.has_attr("ignore_index");
  const std::string red = reduction_of(n);
  double sum = 0, wsum = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t d = 0; d < inner; ++d) {
      const int64_t t = target[b * inner + d];
      double l = 0, w = 0;
      if (!(has_ignore && t == ignore)) {
        if (t < 0 || t >= classes)
          throw Error(n.describe() + ": target " + std::to_string(t) + " is out of range for " + std::to_string(classes) + " classes");
        w = weight ? double(weight[t]) : 1.0;
        l = -double(logp[(b * classes + t) * inner + d]) * w;
      }
      if (red == "none") out[b * inner + d] = T(l);
      sum += l;
      wsum += w;
    }
  if (red == "sum") out[0] = T(sum);
  else if (red == "mean") out[0] = T(sum / wsum);
}

std::vector<ValueInfo> infer_nll(const ShapeContext& c) {
  const ValueInfo* w = c.has_input(2) ? &c.in(2) : nullptr;
  return {ValueInfo{c.in(0).dtype, loss_shape(c.node, c.in(0), c.in(1), w), true}};
}

template <typename T>
void compute_nll_typed(OpContext& c) {
  const Tensor& x = c.in(0);
  const int64_t batch = x.shape()[0], classes = x.shape()[1];
  const int64_t inner = (batch * classes != 0) ? x.numel() / (batch * classes) : 0;
  nll<T>(c.node, x.data<T>(), c.in(1).as_int64_vector(), c.has_input(2) ? c.in(2).data<T>() : nullptr, batch, classes, inner,
         c.out(0).data<T>());
}

void compute_nll(OpContext& c) {
  if (c.in(0).dtype() == DType::Float64) compute_nll_typed<double>(c);
  else compute_nll_typed<float>(c);
}

std::vector<ValueInfo> infer_sce(const ShapeContext& c) {
  const ValueInfo* w = c.has_input(2) ? &c.in(2) : nullptr;
  std::vector<ValueInfo> r{ValueInfo{c.in(0).dtype, loss_shape(c.node, c.in(0), c.in(1), w), true}};
  if (c.node.outputs.size() > 1) r.push_back(ValueInfo{c.in(0).dtype, c.in(0).shape, true});
  return r;
}

template <typename T>
void compute_sce_typed(OpContext& c) {
  const Tensor& x = c.in(0);
  const int64_t batch = x.shape()[0], classes = x.shape()[1];
  const int64_t inner = (batch * classes != 0) ? x.numel() / (batch * classes) : 0;
  // log_softmax over the class axis.
  std::vector<T> own;
  T* logp;
  if (c.outputs.size() > 1 && c.outputs[1]) logp = c.out(1).data<T>();
  else own.resize(size_t(x.numel())), logp = own.data();
  const T* in = x.data<T>();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t d = 0; d < inner; ++d) {
      const T* base = in + b * classes * inner + d;
      double mx = -INFINITY, s = 0;
      for (int64_t k = 0; k < classes; ++k) mx = std::max(mx, double(base[k * inner]));
      for (int64_t k = 0; k < classes; ++k) s += std::exp(double(base[k * inner]) - mx);
      const double lse = mx + std::log(s);
      for (int64_t k = 0; k < classes; ++k) logp[(b * classes + k) * inner + d] = T(double(base[k * inner]) - lse);
    }
  nll<T>(c.node, logp, c.in(1).as_int64_vector(), c.has_input(2) ? c.in(2).data<T>() : nullptr, batch, classes, inner,
         c.out(0).data<T>());
}

void compute_sce(OpContext& c) {
  if (c.in(0).dtype() == DType::Float64) compute_sce_typed<double>(c);
  else compute_sce_typed<float>(c);
}

}  // namespace

void register_loss_ops(OpRegistry& r) {
  r.add(OpDef{"", "NegativeLogLikelihoodLoss", infer_nll, compute_nll});
  r.add(OpDef{"", "SoftmaxCrossEntropyLoss", infer_sce, compute_sce});
}

}  // namespace fb
