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

bool Graph::is_graph_output(const std::string& v) const {
  return std::find(outputs.begin(), outputs.end(), v) != outputs.end();
}

const ValueInfo& Graph::value(const std::string& v) const {
  auto it = values.find(v);
  if (it == values.end()) throw Error("value '" + v + "' is not defined in the graph");
  return it->second;
}

const Node* Graph::producer(const std::string& v) const {
  for (const Node& n : nodes)
    for (const std::string& o : n.outputs)
      if (o == v) return &n;
  return nullptr;
}

std::vector<size_t> Graph::consumers(const std::string& v) const {
  std::vector<size_t> r;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const std::string& in : nodes[i].inputs)
      if (in == v) {
        r.push_back(i);
        break;
      }
  return r;
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
}

std::string Graph::unique_value_name(const std::string& stem) const {
  if (!values.count(stem) && !initializers.count(stem)) return stem;
  for (int i = 1;; ++i) {
    std::string c = stem + "_" + std::to_string(i);
    if (!values.count(c) && !initializers.count(c)) return c;
  }
}

}  // namespace fb
