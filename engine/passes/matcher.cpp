#include "engine/passes/matcher.h"

#include <cstring>

namespace fb {

bool Op::matches(const Node* n) const {
  return n && n->op_type == type && n->domain == domain && (inputs < 0 || int(n->inputs.size()) == inputs);
}

Matcher::Matcher(const PassContext& ctx, size_t root) : ctx_(&ctx), nodes_{root} {}

const Node* Matcher::producer(const std::string& v, Op op) {
  const int i = ctx_->graph.producer_index(v);
  if (i < 0 || !op.matches(&ctx_->graph.nodes[size_t(i)])) return nullptr;
  take(size_t(i));
  return &ctx_->graph.nodes[size_t(i)];
}

const Node* Matcher::producer(const std::string& v) {
  const int i = ctx_->graph.producer_index(v);
  if (i < 0) return nullptr;
  take(size_t(i));
  return &ctx_->graph.nodes[size_t(i)];
}

const Node* Matcher::reader(const std::string& v, Op op) {
  const int i = single_consumer(ctx_->graph, v);
  if (i < 0 || !op.matches(&ctx_->graph.nodes[size_t(i)])) return nullptr;
  take(size_t(i));
  return &ctx_->graph.nodes[size_t(i)];
}

const Node* Matcher::silu(const std::string& v) {
  const Graph& g = ctx_->graph;
  const std::vector<size_t>& users = g.consumers(v);
  if (users.size() != 2) return nullptr;
  size_t s = users[0], mi = users[1];
  if (is_onnx_op(&g.nodes[mi], "Sigmoid")) std::swap(s, mi);
  const Node& sig = g.nodes[s];
  const Node& mul = g.nodes[mi];
  if (!is_onnx_op(&sig, "Sigmoid") || !is_onnx_op(&mul, "Mul") || single_consumer(g, sig.outputs[0]) != int(mi)) return nullptr;
  const std::string* other = beside(&mul, v);
  if (!other || *other != sig.outputs[0]) return nullptr;
  take(s);
  take(mi);
  return &mul;
}

const std::string* Matcher::beside(const Node* n, const std::string& v) {
  if (!n || n->inputs.size() != 2) return nullptr;
  if (n->inputs[0] == v) return &n->inputs[1];
  if (n->inputs[1] == v) return &n->inputs[0];
  return nullptr;
}

}  // namespace fb
