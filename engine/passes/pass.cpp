#include "engine/passes/pass.h"

#include <algorithm>

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

void replace_nodes(Graph& g, std::vector<size_t> indices, Node fused) {
  std::sort(indices.begin(), indices.end());
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
  FB_CHECK(!indices.empty(), "nothing to replace");
  fused.sources.clear();
  for (size_t i : indices)
    for (const std::string& s : g.nodes[i].sources) fused.sources.push_back(s);
  if (fused.opset == 0) fused.opset = g.nodes[indices.back()].opset;
  g.nodes[indices.back()] = std::move(fused);
  for (size_t k = indices.size() - 1; k-- > 0;) g.nodes.erase(g.nodes.begin() + long(indices[k]));
}

}  // namespace fb
