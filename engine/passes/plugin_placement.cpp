#include "engine/passes/plugin_placement.h"

#include <algorithm>
#include <set>

#include "engine/passes/pass.h"

namespace fb {

namespace {

std::string where(const PluginPlacement& p) {
  return "plugin placement '" + p.op + "'" + (p.name.empty() ? "" : " ('" + p.name + "')");
}

Node plugin_node(const PluginPlacement& p, std::string name, std::vector<std::string> ins, std::vector<std::string> outs,
                 int64_t opset) {
  Node n;
  std::tie(n.domain, n.op_type) = split_plugin_op(p.op);
  n.name = std::move(name);
  n.inputs = std::move(ins);
  n.outputs = std::move(outs);
  n.attrs = p.attrs;
  n.sources = {n.name};
  n.opset = opset;
  return n;
}

bool name_taken(const Graph& g, const std::string& name) {
  return std::any_of(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.name == name; });
}

void place_after(Graph& g, const PluginPlacement& p, std::vector<std::string>* log) {
  const std::string& t = p.after;
  const bool is_input = std::any_of(g.inputs.begin(), g.inputs.end(), [&](const GraphInput& i) { return i.name == t; });
  int producer = -1;
  for (size_t i = 0; i < g.nodes.size() && producer < 0; ++i)
    for (const std::string& o : g.nodes[i].outputs)
      if (o == t) producer = int(i);
  if (producer < 0 && !is_input && !g.is_initializer(t))
    throw Error(where(p) + ": field 'after': no tensor '" + t + "' in the model");
  const std::string name = p.name.empty() ? p.op + "@" + t : p.name;
  if (name_taken(g, name)) throw Error(where(p) + ": a node named '" + name + "' exists already");
  if (producer >= 0) {
    // The producer writes T.pre_plugin; the plugin writes T, so T's readers (and a graph
    // output named T) need no change.
    const std::string pre = g.unique_value_name(t + ".pre_plugin");
    Node& prod = g.nodes[size_t(producer)];
    for (std::string& o : prod.outputs)
      if (o == t) o = pre;
    if (g.values.count(t)) g.values[pre] = g.values.at(t);
    g.nodes.insert(g.nodes.begin() + producer + 1, plugin_node(p, name, {pre}, {t}, prod.opset));
  } else {
    const std::string out = g.unique_value_name(t + ".plugin");
    for (Node& n : g.nodes)
      for (std::string& in : n.inputs)
        if (in == t) in = out;
    for (std::string& o : g.outputs)
      if (o == t) throw Error(where(p) + ": field 'after': '" + t + "' is both a graph input and output");
    if (g.values.count(t)) g.values[out] = g.values.at(t);
    g.nodes.insert(g.nodes.begin(), plugin_node(p, name, {t}, {out}, g.opset));
  }
  if (log) log->push_back("plugin: '" + name + "' (" + p.op + ") placed after tensor '" + t + "'");
}

bool matches(const Node& n, const PluginPlacement& p) {
  bool by_name = p.replace_nodes.empty(), by_op = p.replace_ops.empty();
  for (const std::string& glob : p.replace_nodes) by_name = by_name || glob_match(glob, n.name);
  for (const std::string& op : p.replace_ops) by_op = by_op || op == n.op_type;
  return by_name && by_op;
}

void place_replacing(Graph& g, const PluginPlacement& p, std::vector<std::string>* log) {
  std::vector<size_t> matched;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (matches(g.nodes[i], p)) matched.push_back(i);
  if (matched.empty()) throw Error(where(p) + ": field 'replace': no node matches");
  // Groups: matched nodes joined by a value one produces and another reads (union-find).
  std::vector<size_t> parent(matched.size());
  for (size_t k = 0; k < parent.size(); ++k) parent[k] = k;
  auto find = [&](size_t k) {
    while (parent[k] != k) k = parent[k] = parent[parent[k]];
    return k;
  };
  std::map<std::string, size_t> produced_by;  // value -> index into matched
  for (size_t k = 0; k < matched.size(); ++k)
    for (const std::string& o : g.nodes[matched[k]].outputs) produced_by[o] = k;
  for (size_t k = 0; k < matched.size(); ++k)
    for (const std::string& in : g.nodes[matched[k]].inputs) {
      auto it = produced_by.find(in);
      if (it != produced_by.end()) parent[find(k)] = find(it->second);
    }
  std::map<size_t, std::vector<size_t>> groups;  // root -> node indices, in graph order
  for (size_t k = 0; k < matched.size(); ++k) groups[find(k)].push_back(matched[k]);

  const std::string stem = p.name.empty() ? p.op : p.name;
  std::vector<std::pair<std::vector<size_t>, Node>> replacements;
  int count = 0;
  for (const auto& [_, idx] : groups) {
    std::set<std::string> inside_out;
    for (size_t i : idx) inside_out.insert(g.nodes[i].outputs.begin(), g.nodes[i].outputs.end());
    std::set<size_t> idx_set(idx.begin(), idx.end());
    std::vector<std::string> ins, outs;
    for (size_t i : idx)
      for (const std::string& in : g.nodes[i].inputs) {
        if (in.empty() || inside_out.count(in) || std::find(ins.begin(), ins.end(), in) != ins.end()) continue;
        auto init = g.initializers.find(in);
        if (init != g.initializers.end() && init->second.numel() == 1) continue;  // the pattern's own constant
        ins.push_back(in);
      }
    std::set<std::string> read_outside(g.outputs.begin(), g.outputs.end());
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (idx_set.count(i)) continue;
      read_outside.insert(g.nodes[i].inputs.begin(), g.nodes[i].inputs.end());
      add_subgraph_reads(g.nodes[i], read_outside);
    }
    for (size_t i : idx)
      for (const std::string& o : g.nodes[i].outputs)
        if (!o.empty() && read_outside.count(o)) outs.push_back(o);
    if (outs.empty()) throw Error(where(p) + ": the nodes around '" + g.nodes[idx[0]].name + "' produce nothing the model reads");
    const std::string name = groups.size() == 1 ? stem : stem + "#" + std::to_string(count);
    if (name_taken(g, name)) throw Error(where(p) + ": a node named '" + name + "' exists already");
    Node n = plugin_node(p, name, ins, outs, g.nodes[idx.back()].opset);
    if (log)
      log->push_back("plugin: '" + name + "' (" + p.op + ") replaces " + std::to_string(idx.size()) + " nodes from '" +
                     g.nodes[idx.front()].name + "' to '" + g.nodes[idx.back()].name + "'");
    replacements.emplace_back(idx, std::move(n));
    ++count;
  }
  // Graph::replace_nodes keeps the sources and leaves indices valid until compact().
  for (auto& [idx, n] : replacements) g.replace_nodes(idx, std::move(n));
  g.compact();
  try {
    g.topological_sort();
  } catch (const Error& e) {
    throw Error(where(p) + ": the matched nodes cannot become one node (a node between them is not matched): " + e.what());
  }
}

}  // namespace

std::pair<std::string, std::string> split_plugin_op(const std::string& q) {
  const size_t dot = q.rfind('.');
  if (dot == std::string::npos) return {"", q};
  return {q.substr(0, dot), q.substr(dot + 1)};
}

Graph place_plugins(Graph g, const std::vector<PluginPlacement>& placements, std::vector<std::string>* log) {
  for (const PluginPlacement& p : placements) {
    if (split_plugin_op(p.op).second.empty()) throw Error(where(p) + ": field 'op': expected 'domain.OpType'");
    const bool replacing = !p.replace_nodes.empty() || !p.replace_ops.empty();
    if (replacing == !p.after.empty())
      throw Error(where(p) + ": give exactly one of 'after' (a tensor) and 'replace' (nodes or ops)");
    if (replacing) place_replacing(g, p, log);
    else place_after(g, p, log);
  }
  return g;
}

}  // namespace fb
