#include "engine/passes/pass.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "engine/backend/backend.h"

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
  if (n.is_plugin()) return false;  // a plugin is a fusion barrier by construction: what it costs is measured
  for (const std::string& t : c.exclude_op_types)
    if (t == n.op_type) return false;
  for (const std::string& g : c.exclude_nodes)
    for (const std::string& src : n.sources)
      if (glob_match(g, src)) return false;
  return true;
}

bool is_partition_point(const BuildConfig& c, const std::string& v) {
  return std::find(c.partition_points.begin(), c.partition_points.end(), v) != c.partition_points.end();
}

std::string fusion_refusal(const PassContext& ctx, const FusionMatch& m, size_t max_nodes) {
  const Graph& g = ctx.graph;
  const BuildConfig& c = ctx.config;
  if (max_nodes && m.nodes.size() > max_nodes)
    return std::to_string(m.nodes.size()) + " nodes, more than the cap of " + std::to_string(max_nodes);
  std::vector<size_t> inside = m.nodes;
  std::sort(inside.begin(), inside.end());
  auto is_inside = [&](size_t i) { return std::binary_search(inside.begin(), inside.end(), i); };
  const Node& first = g.nodes[inside.front()];
  for (size_t i : inside) {
    const Node& n = g.nodes[i];
    if (!node_fusible(n, c)) return n.describe() + " is excluded from fusion";
    // The precision slot: nodes the assignment gave different precisions never share a layer.
    if (n.precision != first.precision)
      return first.describe() + " runs in " + precision_name(first.precision) + ", " + n.describe() + " in " +
             precision_name(n.precision);
  }
  // The fused form must be a layer the build's backend can run at the match's precision,
  // where it runs the first node at that precision (a precision no node has a kernel for
  // is precision lowering's to settle, later).
  if (ctx.backend && !m.fused.op_type.empty()) {
    const OpDef* def = ctx.ops.find(m.fused.domain, m.fused.op_type);
    const OpDef* first_def = ctx.ops.find(first.domain, first.op_type);
    if (def && first_def && ctx.backend->supports(first, *first_def, first.precision) &&
        !ctx.backend->supports(m.fused, *def, first.precision))
      return "the " + ctx.backend->name() + " backend has no " + precision_name(first.precision) + " kernel for " +
             (m.fused.domain.empty() ? "" : m.fused.domain + ".") + m.fused.op_type;
  }
  for (size_t i : inside)
    for (const std::string& v : g.nodes[i].outputs) {
      if (v.empty()) continue;
      const std::vector<size_t>& readers = g.consumers(v);
      const bool read_inside = std::any_of(readers.begin(), readers.end(), is_inside);
      if (read_inside && is_partition_point(c, v)) return "value '" + v + "' is a partition point";
      if (std::find(m.fused.outputs.begin(), m.fused.outputs.end(), v) != m.fused.outputs.end()) continue;
      if (g.is_graph_output(v)) return "value '" + v + "' is a graph output";
      for (size_t r : readers)
        if (!is_inside(r)) return "value '" + v + "' is also read by " + g.nodes[r].describe();
    }
  return "";
}

namespace {

std::vector<std::string> node_names(const Graph& g, std::vector<size_t> idx) {
  std::sort(idx.begin(), idx.end());
  std::vector<std::string> names;
  for (size_t i : idx) names.push_back(g.nodes[i].name);
  return names;
}

void record(PassContext& ctx, FusionEvent e) {
  ctx.log.push_back(e.text);
  if (ctx.events) ctx.events->push_back(std::move(e));
}

}  // namespace

int run_fusion_rule(PassContext& ctx, Rule rule) {
  Graph& g = ctx.graph;
  g.compact();
  int fused = 0;
  std::unordered_set<std::string> refused_roots;  // a refusal is recorded once, not once per sweep
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (g.removed(i)) continue;
      std::vector<FusionMatch> candidates = rule(ctx, i);
      if (candidates.empty()) continue;
      std::string why;
      FusionMatch* chosen = nullptr;
      for (FusionMatch& m : candidates) {
        std::string r = fusion_refusal(ctx, m);
        if (r.empty()) {
          chosen = &m;
          break;
        }
        if (why.empty()) why = std::move(r);
      }
      const std::string root = g.nodes[i].name;
      if (!chosen) {
        if (refused_roots.insert(root).second)
          record(ctx, {ctx.pass, root, node_names(g, candidates.front().nodes), "", why,
                       "  " + ctx.pass + ": refused at '" + root + "': " + why});
        continue;
      }
      FusionEvent e{ctx.pass, root, node_names(g, chosen->nodes), chosen->fused.name, "", std::move(chosen->log)};
      for (auto& [name, t] : chosen->initializers) {
        g.values[name] = ValueInfo{t.dtype(), t.shape(), true};
        g.initializers[name] = std::move(t);
      }
      g.replace_nodes(std::move(chosen->nodes), std::move(chosen->fused));
      record(ctx, std::move(e));
      ++fused;
      changed = true;
    }
  }
  g.compact();
  return fused;
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
  const std::vector<size_t>& cs = g.consumers(v);
  return cs.size() == 1 ? int(cs[0]) : -1;
}

const Tensor* constant_value(const PassContext& ctx, const std::string& v) {
  auto it = ctx.graph.initializers.find(v);
  if (it != ctx.graph.initializers.end()) return &it->second;
  auto kt = ctx.known.find(v);
  return kt != ctx.known.end() ? &kt->second : nullptr;
}

bool constant_scalar(const PassContext& ctx, const std::string& v, float* out) {
  const Tensor* t = constant_value(ctx, v);
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

}  // namespace fb
