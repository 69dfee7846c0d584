// The PyTorch-like baseline: eager, op by op, fp32, with a fresh output buffer for every
// op and each intermediate freed after its last use (as reference counting does), no
// graph rewriting. Kernels are the shared op table's (oneDNN for matrix products), so a
// speedup over it measures optimization, not a deliberately slow baseline.
#pragma once
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/ops/op_registry.h"

namespace fb {

class ReferenceExecutor {
 public:
  // Checks that every op is supported and binds the input shapes (dim 0 to `batch`,
  // `input_shapes` by name for the rest). Shapes are computed as it runs, like eager
  // PyTorch, so a bad shape is an error at run time naming the node. Kernels come from
  // `ops` (a plugin's ops run when they are registered there).
  ReferenceExecutor(Graph graph, int64_t batch, const std::map<std::string, Shape>& input_shapes = {},
                    std::shared_ptr<const OpRegistry> ops = OpRegistry::builtin());

  // Runs the graph on inputs given in graph-input order; returns outputs in graph-output order.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  // Every value the graph computes, by name (for debugging and the mark-all comparison).
  std::map<std::string, Tensor> run_all(const std::vector<Tensor>& inputs) const;

  const Graph& graph() const { return graph_; }
  // Input shapes with the batch bound.
  const std::vector<Shape>& input_shapes() const { return input_shapes_; }
  // High-water mark of live activation bytes in the last run.
  size_t peak_activation_bytes() const { return peak_bytes_; }

 private:
  std::map<std::string, Tensor> execute(const std::vector<Tensor>& inputs, bool keep_all) const;
  // Node i's input 0 when nothing reads it after node i (a plugin may write over it, as
  // in the engine); nullptr otherwise.
  const Tensor* reusable_input0(size_t i, const std::map<std::string, Tensor>& env) const;

  Graph graph_;
  std::shared_ptr<const OpRegistry> ops_;
  std::vector<Shape> input_shapes_;
  std::vector<std::vector<std::string>> free_after_;  // values whose last use is node i
  mutable size_t peak_bytes_ = 0;
};

}  // namespace fb
