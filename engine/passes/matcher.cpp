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

const std::string* Matcher::beside(const Node* n, const std::string& v) {
  if (!n || n->inputs.size() != 2) return nullptr;
  if (n->inputs[0] == v) return &n->inputs[1];
  if (n->inputs[1] == v) return &n->inputs[0];
  return nullptr;
}

}  // namespace fb
