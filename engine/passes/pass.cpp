#include "engine/passes/pass.h"

#include <algorithm>
#include <cmath>

namespace fb {

bool glob_match(const std::string& p, const std::string& s) {
  size_t pi = 0, si = 0, star = std::string::npos, mark = 0;
  while (si < s.size()) {
    if (pi < p.size() && (p[pi] == '?' || p[pi] == s[si])) {
      ++pi, ++si;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = si;
    } else if (star != std::string::npos) {
      pi = star + 1;
      si = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

bool node_fusible(const Node& n, const BuildConfig& c) {
  for (const std::string& t : c.exclude_op_types)
    if (t == n.op_type) return false;
  for (const std::string& g : c.exclude_nodes)
    for (const std::string& src : n.sources)
      if (glob_match(g, src)) return false;
  return true;
}

bool value_fusible(const Graph& g, const std::string& v, const BuildConfig& c) {
  if (g.is_graph_output(v)) return false;
  if (std::find(c.partition_points.begin(), c.partition_points.end(), v) != c.partition_points.end()) return false;
  return g.consumers(v).size() == 1;
}

void add_subgraph_reads(const Node& n, std::set<std::string>& reads) {
  for (const auto& [_, a] : n.attrs) {
    const auto* body = std::get_if<std::shared_ptr<const Graph>>(&a.value);
    if (!body || !*body) continue;
    for (const Node& inner : (*body)->nodes) {
      reads.insert(inner.inputs.begin(), inner.inputs.end());
      add_subgraph_reads(inner, reads);
    }
    reads.insert((*body)->outputs.begin(), (*body)->outputs.end());
  }
}

void remove_unread_initializers(Graph& g) {
  std::set<std::string> reads(g.outputs.begin(), g.outputs.end());
  for (const Node& n : g.nodes) {
    reads.insert(n.inputs.begin(), n.inputs.end());
    add_subgraph_reads(n, reads);
  }
  for (auto it = g.initializers.begin(); it != g.initializers.end();)
    it = reads.count(it->first) ? std::next(it) : g.initializers.erase(it);
}

int single_consumer(const Graph& g, const std::string& v) {
  auto cs = g.consumers(v);
  return cs.size() == 1 ? int(cs[0]) : -1;
}

bool constant_scalar(const PassContext& ctx, const std::string& v, float* out) {
  const Tensor* t = nullptr;
  auto it = ctx.graph.initializers.find(v);
  if (it != ctx.graph.initializers.end()) t = &it->second;
  auto kt = ctx.known.find(v);
  if (!t && kt != ctx.known.end()) t = &kt->second;
  if (!t || t->numel() != 1 || t->dtype() != DType::Float32) return false;
  *out = t->data<float>()[0];
  return true;
}

bool constant_near(const PassContext& ctx, const std::string& v, float expected) {
  float c = 0;
  return constant_scalar(ctx, v, &c) && std::fabs(c - expected) <= 1e-4f * std::max(1.f, std::fabs(expected));
}

bool is_onnx_op(const Node* n, const char* op_type) { return n && n->domain.empty() && n->op_type == op_type; }

Node fusebench_node(std::string name, std::string op_type, std::vector<std::string> inputs,
                    std::vector<std::string> outputs) {
  Node n;
  n.name = std::move(name);
  n.op_type = std::move(op_type);
  n.domain = "fusebench";
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  return n;
}

void replace_nodes(Graph& g, std::vector<size_t> indices, Node fused) {
  std::sort(indices.begin(), indices.end());
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
  FB_CHECK(!indices.empty(), "nothing to replace");
  fused.sources.clear();
  for (size_t i : indices)
    for (const std::string& s : g.nodes[i].sources) fused.sources.push_back(s);
  if (fused.opset == 0) fused.opset = g.nodes[indices.back()].opset;
  fused.precision = g.nodes[indices.back()].precision;  // sources agree: can_fuse checked
  fused.precision_reason = g.nodes[indices.back()].precision_reason;
  g.nodes[indices.back()] = std::move(fused);
  for (size_t k = indices.size() - 1; k-- > 0;) g.nodes.erase(g.nodes.begin() + long(indices[k]));
}

}  // namespace fb
