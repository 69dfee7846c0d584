#include "engine/onnx/model_limits.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "engine/ir/error.h"
#include "engine/ir/memory_limit.h"

namespace fb {

namespace {

struct LimitRow {
  const char* name;
  int64_t ModelLimits::*member;
};
constexpr LimitRow kRows[] = {
    {"tensor_elements", &ModelLimits::tensor_elements},     {"initializer_bytes", &ModelLimits::initializer_bytes},
    {"nodes", &ModelLimits::nodes},                         {"graph_depth", &ModelLimits::graph_depth},
    {"subgraph_nesting", &ModelLimits::subgraph_nesting},   {"attribute_elements", &ModelLimits::attribute_elements},
    {"string_bytes", &ModelLimits::string_bytes},
};

// Walks a model once, counting and checking as it goes; the first excess throws.
class LimitCheck {
 public:
  LimitCheck(const std::string& source, const ModelLimits& limits) : source_(source), limits_(limits) {
    if (limits_.initializer_bytes <= 0) limits_.initializer_bytes = int64_t(physical_memory_bytes());
  }

  void graph(const onnx::GraphProto& g, int64_t nesting, const std::string& where) {
    if (nesting > limits_.subgraph_nesting)
      fail(where, "subgraph_nesting", "a body nested " + std::to_string(nesting) + " deep", limits_.subgraph_nesting);
    text(g.name(), where + "'s name");
    for (const onnx::TensorProto& t : g.initializer()) {
      const std::string at = "initializer '" + clip(t.name()) + "'";
      text(t.name(), at + "'s name");
      initializer_bytes_ += declared_bytes(t, at);
      if (initializer_bytes_ > limits_.initializer_bytes)
        fail(at, "initializer_bytes", "the initializers up to here hold " + std::to_string(initializer_bytes_) + " bytes",
             limits_.initializer_bytes);
    }
    for (const auto* values : {&g.input(), &g.output(), &g.value_info()})
      for (const onnx::ValueInfoProto& v : *values) text(v.name(), "value '" + clip(v.name()) + "'");
    nodes_ += g.node_size();
    if (nodes_ > limits_.nodes)
      fail(where, "nodes", "the model has at least " + std::to_string(nodes_) + " nodes", limits_.nodes);
    for (int i = 0; i < g.node_size(); ++i) node(g.node(i), nesting, i);
    depth(g, where);
  }

 private:
  [[noreturn]] void fail(const std::string& where, const char* limit, const std::string& what, int64_t max) const {
    throw Error(source_ + ": " + where + ": " + what + ", over the limit " + limit + " = " + std::to_string(max) +
                " (FUSEBENCH_MODEL_LIMITS sets it)");
  }
  // A name for messages: a hostile name is cut short before it is quoted.
  static std::string clip(const std::string& s) { return s.size() > 80 ? s.substr(0, 80) + "..." : s; }
  void text(const std::string& s, const std::string& what) const {
    if (int64_t(s.size()) > limits_.string_bytes)
      fail(what, "string_bytes", "a string of " + std::to_string(s.size()) + " bytes", limits_.string_bytes);
  }
  // Elements the dims declare, refused past the limit before anything multiplies further.
  int64_t elements(const google::protobuf::RepeatedField<int64_t>& dims, const std::string& at) const {
    int64_t n = 1;
    for (int64_t d : dims) {
      if (d < 0) throw Error(source_ + ": " + at + ": a negative dimension (" + std::to_string(d) + ")");
      if (d != 0 && n > limits_.tensor_elements / d)
        fail(at, "tensor_elements", "its dimensions declare more than " + std::to_string(limits_.tensor_elements) + " elements",
             limits_.tensor_elements);
      n *= d;
    }
    if (n > limits_.tensor_elements)
      fail(at, "tensor_elements", "its dimensions declare " + std::to_string(n) + " elements", limits_.tensor_elements);
    return n;
  }
  // What a tensor would take once converted: its declared elements at 8 bytes at most.
  int64_t declared_bytes(const onnx::TensorProto& t, const std::string& at) const {
    const int64_t n = elements(t.dims(), at);
    return n > INT64_MAX / 8 ? INT64_MAX : n * 8;
  }
  void node(const onnx::NodeProto& n, int64_t nesting, int index) {
    const std::string at = "node '" + clip(n.name().empty() ? n.op_type() + "_" + std::to_string(index) : n.name()) + "' (" +
                           clip(n.op_type()) + ")";
    text(n.name(), at + "'s name");
    text(n.op_type(), at + "'s op type");
    text(n.domain(), at + "'s domain");
    for (const auto* names : {&n.input(), &n.output()})
      for (const std::string& v : *names) text(v, at + ": value '" + clip(v) + "'");
    for (const onnx::AttributeProto& a : n.attribute()) {
      const std::string aw = at + ": attribute '" + clip(a.name()) + "'";
      text(a.name(), aw + "'s name");
      text(a.s(), aw);
      for (const std::string& s : a.strings()) text(s, aw);
      const int64_t count = int64_t(a.ints_size()) + a.floats_size() + a.strings_size() + a.tensors_size() + a.graphs_size();
      if (count > limits_.attribute_elements)
        fail(aw, "attribute_elements", "it holds " + std::to_string(count) + " values", limits_.attribute_elements);
      if (a.has_t()) declared_bytes(a.t(), aw);
      for (const onnx::TensorProto& t : a.tensors()) declared_bytes(t, aw);
      if (a.has_g()) graph(a.g(), nesting + 1, aw + "'s body");
      for (const onnx::GraphProto& g : a.graphs()) graph(g, nesting + 1, aw + "'s body");
    }
  }
  // The longest chain of nodes by value names (Kahn's order; a cycle is the checker's to name).
  void depth(const onnx::GraphProto& g, const std::string& where) const {
    std::map<std::string, size_t> producer;
    for (int i = 0; i < g.node_size(); ++i)
      for (const std::string& o : g.node(i).output())
        if (!o.empty()) producer[o] = size_t(i);
    std::vector<std::vector<size_t>> readers(size_t(g.node_size()));
    std::vector<int> waiting(size_t(g.node_size()), 0);
    for (int i = 0; i < g.node_size(); ++i) {
      std::set<size_t> from;
      for (const std::string& in : g.node(i).input())
        if (auto p = producer.find(in); p != producer.end() && p->second != size_t(i)) from.insert(p->second);
      for (size_t p : from) readers[p].push_back(size_t(i));
      waiting[size_t(i)] = int(from.size());
    }
    std::vector<int64_t> depth(size_t(g.node_size()), 1);
    std::vector<size_t> ready;
    for (size_t i = 0; i < waiting.size(); ++i)
      if (waiting[i] == 0) ready.push_back(i);
    while (!ready.empty()) {
      const size_t i = ready.back();
      ready.pop_back();
      if (depth[i] > limits_.graph_depth)
        fail(where, "graph_depth",
             "a chain of " + std::to_string(depth[i]) + " nodes ends at node '" + clip(g.node(int(i)).name()) + "'",
             limits_.graph_depth);
      for (size_t r : readers[i]) {
        depth[r] = std::max(depth[r], depth[i] + 1);
        if (--waiting[r] == 0) ready.push_back(r);
      }
    }
  }

  const std::string& source_;
  ModelLimits limits_;
  int64_t nodes_ = 0;
  int64_t initializer_bytes_ = 0;
};

}  // namespace

const char* ModelLimits::names() {
  return "tensor_elements, initializer_bytes, nodes, graph_depth, subgraph_nesting, attribute_elements, string_bytes";
}

void ModelLimits::set(const std::string& name, const std::string& value) {
  for (const LimitRow& r : kRows) {
    if (name != r.name) continue;
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end || errno || v < 0)
      throw Error("model limit " + name + ": expected a non-negative whole number, got '" + value + "'");
    this->*r.member = v;
    return;
  }
  throw Error("unknown model limit '" + name + "' (known: " + names() + ")");
}

ModelLimits ModelLimits::from_environment() {
  ModelLimits l;
  const char* env = std::getenv("FUSEBENCH_MODEL_LIMITS");
  if (!env) return l;
  std::stringstream in(env);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) throw Error("FUSEBENCH_MODEL_LIMITS: expected NAME=N, got '" + item + "'");
    try {
      l.set(item.substr(0, eq), item.substr(eq + 1));
    } catch (const Error& e) {
      throw Error(std::string("FUSEBENCH_MODEL_LIMITS: ") + e.what());
    }
  }
  return l;
}

void check_model_limits(const onnx::ModelProto& model, const std::string& source, const ModelLimits& limits) {
  LimitCheck(source, limits).graph(model.graph(), 0, "the graph");
}

}  // namespace fb
