#include "engine/ops/bound_kernels.h"

#include <atomic>
#include <mutex>
#include <unordered_map>

namespace fb {

namespace {

struct BoundKernels {
  std::mutex mutex;
  std::unordered_map<std::string, ComputeFn> by_op;  // key: domain '\n' op type
};

BoundKernels& bound() {
  static BoundKernels kernels;
  return kernels;
}

std::atomic<FloatMatMulFn>& bound_float_matmul() {
  static std::atomic<FloatMatMulFn> fn{nullptr};
  return fn;
}

std::string op_key(const std::string& domain, const std::string& op_type) {
  return (domain == "ai.onnx" ? std::string() : domain) + '\n' + op_type;
}

std::string unbound_message(const Node& node, const std::string& what) {
  return node.describe() + ": no kernel is bound for " + what +
         ": a backend binds it before running nodes (engine/backend/cpu/cpu_kernels.h: fb::bind_cpu_kernels())";
}

}  // namespace

void bind_op_kernel(const std::string& domain, const std::string& op_type, ComputeFn fn) {
  BoundKernels& b = bound();
  std::lock_guard<std::mutex> lock(b.mutex);
  b.by_op[op_key(domain, op_type)] = fn;
}

void compute_with_bound_kernel(OpContext& c) {
  ComputeFn fn = nullptr;
  {
    BoundKernels& b = bound();
    std::lock_guard<std::mutex> lock(b.mutex);
    auto it = b.by_op.find(op_key(c.node.domain, c.node.op_type));
    if (it != b.by_op.end()) fn = it->second;
  }
  if (!fn)
    throw Error(unbound_message(c.node, "op '" + (c.node.domain.empty() ? "" : c.node.domain + ".") + c.node.op_type + "'"));
  fn(c);
}

void bind_float_matmul(FloatMatMulFn fn) { bound_float_matmul().store(fn); }

void float_matmul(const Node& node, const MatMulSpec& spec, const float* a, const float* b, const float* bias, float* out) {
  FloatMatMulFn fn = bound_float_matmul().load();
  if (!fn) throw Error(unbound_message(node, "the float32 matrix product it runs"));
  fn(spec, a, b, bias, out);
}

}  // namespace fb
