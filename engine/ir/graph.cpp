#include "engine/ir/graph.h"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace fb {

namespace {
template <typename T>
const T* attr_as(const Node& n, const std::string& key) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end()) return nullptr;
  const T* v = std::get_if<T>(&it->second.value);
  if (!v) throw Error(n.describe() + ": attribute '" + key + "' has the wrong type");
  return v;
}
}  // namespace

int64_t Node::attr_int(const std::string& key, int64_t def) const {
  const int64_t* v = attr_as<int64_t>(*this, key);
  return v ? *v : def;
}
float Node::attr_float(const std::string& key, float def) const {
  auto it = attrs.find(key);
  if (it != attrs.end()) {
    if (auto* i = std::get_if<int64_t>(&it->second.value)) return static_cast<float>(*i);
  }
  const float* v = attr_as<float>(*this, key);
  return v ? *v : def;
}
std::string Node::attr_string(const std::string& key, const std::string& def) const {
  const std::string* v = attr_as<std::string>(*this, key);
  return v ? *v : def;
}
std::vector<int64_t> Node::attr_ints(const std::string& key, const std::vector<int64_t>& def) const {
  const auto* v = attr_as<std::vector<int64_t>>(*this, key);
  return v ? *v : def;
}
std::vector<float> Node::attr_floats(const std::string& key, const std::vector<float>& def) const {
  const auto* v = attr_as<std::vector<float>>(*this, key);
  return v ? *v : def;
}
const Tensor* Node::attr_tensor(const std::string& key) const { return attr_as<Tensor>(*this, key); }

std::string Node::describe() const { return "node '" + name + "' (" + op_type + ")"; }

bool Node::is_plugin() const { return !domain.empty() && domain != "ai.onnx" && domain != "fusebench"; }

bool Graph::is_graph_output(const std::string& v) const {
  return std::find(outputs.begin(), outputs.end(), v) != outputs.end();
}

const ValueInfo& Graph::value(const std::string& v) const {
  auto it = values.find(v);
  if (it == values.end()) throw Error("value '" + v + "' is not defined in the graph");
  return it->second;
}

Graph::UseDefIndex& Graph::uses() const {
  if (!uses_.index) {
    uses_.index = std::make_unique<UseDefIndex>();
    uses_.index->producer.reserve(nodes.size() * 2);
    uses_.index->readers.reserve(nodes.size() * 2);
    for (size_t i = 0; i < nodes.size(); ++i)
      if (!removed(i)) index_node(*uses_.index, i);
  }
  return *uses_.index;
}

void Graph::index_node(UseDefIndex& u, size_t i) const {
  const Node& n = nodes[i];
  for (const std::string& o : n.outputs)
    if (!o.empty()) u.producer[o] = i;
  for (const std::string& in : n.inputs) {
    if (in.empty()) continue;
    std::vector<size_t>& r = u.readers[in];
    auto at = std::lower_bound(r.begin(), r.end(), i);
    if (at == r.end() || *at != i) r.insert(at, i);
  }
}

void Graph::unindex_node(UseDefIndex& u, size_t i) const {
  const Node& n = nodes[i];
  for (const std::string& o : n.outputs) {
    auto it = o.empty() ? u.producer.end() : u.producer.find(o);
    if (it != u.producer.end() && it->second == i) u.producer.erase(it);
  }
  for (const std::string& in : n.inputs) {
    auto it = in.empty() ? u.readers.end() : u.readers.find(in);
    if (it == u.readers.end()) continue;
    auto at = std::lower_bound(it->second.begin(), it->second.end(), i);
    if (at != it->second.end() && *at == i) it->second.erase(at);
  }
}

const Node* Graph::producer(const std::string& v) const {
  const int i = producer_index(v);
  return i < 0 ? nullptr : &nodes[size_t(i)];
}

int Graph::producer_index(const std::string& v) const {
  const UseDefIndex& u = uses();
  auto it = u.producer.find(v);
  return it == u.producer.end() ? -1 : int(it->second);
}

const std::vector<size_t>& Graph::consumers(const std::string& v) const {
  static const std::vector<size_t> kNone;
  const UseDefIndex& u = uses();
  auto it = u.readers.find(v);
  return it == u.readers.end() ? kNone : it->second;
}

void Graph::nodes_changed() {
  uses_.index.reset();
  if (removed_.size() != nodes.size()) removed_.clear();
}

void Graph::replace_nodes(std::vector<size_t> indices, Node fused) {
  std::sort(indices.begin(), indices.end());
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
  FB_CHECK(!indices.empty(), "nothing to replace");
  fused.sources.clear();
  for (size_t i : indices) {
    FB_CHECK(i < nodes.size() && !removed(i), "replacing a node that is not there");
    for (const std::string& s : nodes[i].sources) fused.sources.push_back(s);
  }
  const size_t last = indices.back();
  if (fused.opset == 0) fused.opset = nodes[last].opset;
  fused.precision = nodes[last].precision;  // the sources agree: can_fuse checked
  // Why: a source's constraint outranks the others' default (a constrained MatMul fused
  // with its bias Add is still held by the constraint).
  fused.precision_reason = nodes[last].precision_reason;
  for (size_t i : indices)
    if (nodes[i].precision_reason.rfind("constraint", 0) == 0) fused.precision_reason = nodes[i].precision_reason;
  UseDefIndex& u = uses();
  for (size_t i : indices) unindex_node(u, i);
  nodes[last] = std::move(fused);
  index_node(u, last);
  for (size_t k = 0; k + 1 < indices.size(); ++k) {
    if (removed_.empty()) removed_.assign(nodes.size(), false);
    removed_[indices[k]] = true;
  }
}

void Graph::remove_node(size_t i) {
  FB_CHECK(i < nodes.size() && !removed(i), "removing a node that is not there");
  unindex_node(uses(), i);
  if (removed_.empty()) removed_.assign(nodes.size(), false);
  removed_[i] = true;
}

void Graph::rewire_input(size_t i, const std::string& from, const std::string& to) {
  UseDefIndex& u = uses();
  unindex_node(u, i);
  for (std::string& in : nodes[i].inputs)
    if (in == from) in = to;
  index_node(u, i);
}

void Graph::compact() {
  if (removed_.empty()) return;
  size_t w = 0;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!removed_[i]) {
      if (w != i) nodes[w] = std::move(nodes[i]);
      ++w;
    }
  nodes.resize(w);
  removed_.clear();
  uses_.index.reset();
}

void Graph::rename_output(size_t i, const std::string& from, const std::string& to) {
  UseDefIndex& u = uses();
  unindex_node(u, i);
  for (std::string& out : nodes[i].outputs)
    if (out == from) out = to;
  index_node(u, i);
}

void Graph::topological_sort() {
  std::set<std::string> available;
  for (const GraphInput& in : inputs) available.insert(in.name);
  for (const auto& [k, _] : initializers) available.insert(k);
  std::vector<Node> sorted;
  std::vector<bool> placed(nodes.size(), false);
  sorted.reserve(nodes.size());
  bool progress = true;
  while (sorted.size() < nodes.size() && progress) {
    progress = false;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (placed[i]) continue;
      bool ready = std::all_of(nodes[i].inputs.begin(), nodes[i].inputs.end(),
                               [&](const std::string& in) { return in.empty() || available.count(in); });
      if (!ready) continue;
      for (const std::string& o : nodes[i].outputs) available.insert(o);
      sorted.push_back(std::move(nodes[i]));
      placed[i] = true;
      progress = true;
    }
  }
  if (sorted.size() < nodes.size()) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (placed[i]) continue;
      for (const std::string& in : nodes[i].inputs)
        if (!in.empty() && !available.count(in))
          throw Error(nodes[i].describe() + ": input '" + in +
                      "' is produced by no node, graph input or initializer (or lies on a cycle)");
    }
  }
  nodes = std::move(sorted);
  nodes_changed();
}

std::string Graph::unique_value_name(const std::string& stem) const {
  if (!values.count(stem) && !initializers.count(stem)) return stem;
  for (int i = 1;; ++i) {
    std::string c = stem + "_" + std::to_string(i);
    if (!values.count(c) && !initializers.count(c)) return c;
  }
}

}  // namespace fb
