#include "engine/builder/shape_inputs.h"

#include <set>
#include <sstream>

namespace fb {

namespace {

// A scalar or a short vector, as declared (a symbolic length counts).
bool shape_like(const GraphInput& in) {
  return in.dims.size() <= 1 && (in.dims.empty() || in.dims[0] < 0 || in.dims[0] <= kMaxShapeInputElements);
}

bool reads_only_shapes(const Node& n) { return n.domain.empty() && (n.op_type == "Shape" || n.op_type == "Size"); }

// The graph inputs whose values flow into `v`, in the order met.
void value_sources(const Graph& g, const std::string& v, const std::set<std::string>& graph_inputs, std::set<std::string>* seen,
                   std::vector<std::string>* found) {
  std::vector<std::string> stack{v};
  while (!stack.empty()) {
    const std::string cur = stack.back();
    stack.pop_back();
    if (cur.empty() || !seen->insert(cur).second) continue;
    if (graph_inputs.count(cur)) {
      found->push_back(cur);
      continue;
    }
    const Node* p = g.producer(cur);
    if (!p || reads_only_shapes(*p)) continue;  // an initializer, or values made from shapes only
    for (const std::string& in : p->inputs) stack.push_back(in);
  }
}

}  // namespace

std::vector<ShapeInputUse> find_shape_inputs(const Graph& g, const OpRegistry& ops) {
  std::set<std::string> graph_inputs;
  for (const GraphInput& in : g.inputs)
    if (shape_like(in)) graph_inputs.insert(in.name);
  std::map<std::string, ShapeInputUse> first_use;
  for (const Node& n : g.nodes) {
    const OpDef* def = ops.find(n.domain, n.op_type);
    if (!def) continue;
    for (int i : def->shape_inputs) {
      if (size_t(i) >= n.inputs.size() || n.inputs[i].empty()) continue;
      std::set<std::string> seen;
      std::vector<std::string> found;
      value_sources(g, n.inputs[i], graph_inputs, &seen, &found);
      for (const std::string& in : found) first_use.emplace(in, ShapeInputUse{in, &n, i});
    }
  }
  std::vector<ShapeInputUse> r;
  for (const GraphInput& in : g.inputs)
    if (auto it = first_use.find(in.name); it != first_use.end()) r.push_back(it->second);
  return r;
}

std::string shape_use_str(const ShapeInputUse& use) {
  return "feeds " + use.node->op_type + " '" + use.node->name + "' (input " + std::to_string(use.node_input) + ")";
}

std::string value_preview(const Tensor& t) {
  constexpr int64_t kShown = 8;
  std::ostringstream os;
  os << dtype_name(t.dtype()) << shape_str(t.shape()) << " [";
  const int64_t n = std::min(t.numel(), kShown);
  for (int64_t i = 0; i < n; ++i) {
    if (i) os << ", ";
    switch (t.dtype()) {
      case DType::Float32: os << t.data<float>()[i]; break;
      case DType::Float64: os << t.data<double>()[i]; break;
      case DType::Int64: os << t.data<int64_t>()[i]; break;
      case DType::Int32: os << t.data<int32_t>()[i]; break;
      case DType::Int8: os << int(t.data<int8_t>()[i]); break;
      case DType::UInt8: os << int(t.data<uint8_t>()[i]); break;
      case DType::Bool: os << (t.data<bool>()[i] ? "true" : "false"); break;
      default: os << "?"; break;
    }
  }
  if (t.numel() > kShown) os << ", ... " << t.numel() - kShown << " more";
  return os.str() + "]";
}

}  // namespace fb
