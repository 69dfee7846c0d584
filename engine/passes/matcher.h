// The shared matcher every fusion rule walks its pattern with: from a root node, through
// the graph's use-def index, recording the nodes it takes. It checks structure only (op
// types, arity, who reads what); whether the taken nodes may become one layer is
// can_fuse's to say (engine/passes/pass.h), once, for every pass.
//
// Ops are data ({"Mul", 2}: an ONNX Mul with two inputs), and so are the tables of
// alternatives the passes keep (activations a MatMul or Conv takes, ...). A Matcher is a
// value: copy it to try an optional extension, keep the copy that went further. Rules that
// are one expression write it as a Pattern (engine/passes/pattern.h), which walks this.
#pragma once
#include <string>
#include <vector>

#include "engine/passes/pass.h"

namespace fb {

// An op to match: type, input count (-1: any) and domain ("" for ONNX).
struct Op {
  const char* type;
  int inputs = -1;
  const char* domain = "";
  bool matches(const Node* n) const;
};

class Matcher {
 public:
  // Starts at `root`, which is taken.
  Matcher(const PassContext& ctx, size_t root);

  // The node writing v, when it is `op`; taken.
  const Node* producer(const std::string& v, Op op);
  // The node writing v, whatever it is (nullptr for a graph input or constant); taken.
  const Node* producer(const std::string& v);
  // The only reader of v, when it is `op`; taken.
  const Node* reader(const std::string& v, Op op);
  // SiLU of v as exports write it, v · Sigmoid(v), where the Sigmoid and the Mul are v's
  // only readers (and the Mul the Sigmoid's): the Mul, with both taken; else nullptr.
  const Node* silu(const std::string& v);
  // Takes node i.
  void take(size_t i) { nodes_.push_back(i); }

  // n's operand other than v (n binary and reading v), or nullptr.
  static const std::string* beside(const Node* n, const std::string& v);

  // Backtracking: a mark, and going back to it (dropping what was taken since).
  size_t mark() const { return nodes_.size(); }
  void reset(size_t mark) { nodes_.resize(mark); }
  size_t size() const { return nodes_.size(); }
  const PassContext& context() const { return *ctx_; }
  const std::vector<size_t>& nodes() const { return nodes_; }

  // The candidate: the taken nodes become `fused`; `log` is its build-log line.
  FusionMatch match(Node fused, std::string log) const { return FusionMatch{nodes_, std::move(fused), std::move(log)}; }

 private:
  const PassContext* ctx_;
  std::vector<size_t> nodes_;
};

}  // namespace fb
