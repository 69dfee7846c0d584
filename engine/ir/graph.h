// The engine's IR: a graph of nodes connected by named values. Every value has a dtype
// and, once the batch is bound, a static shape. Nodes keep `sources`: the names of the
// ONNX nodes they stand for. An imported node lists itself; a fused node lists every node
// it replaced. That list is what lets the profiler and the inspector see through fusion.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "engine/ir/precision.h"
#include "engine/ir/tensor.h"

namespace fb {

class Graph;

struct Attribute {
  // A Graph is a subgraph (If's branches, Loop's body), shared and never modified after import.
  std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>,
               std::vector<std::string>, Tensor, std::shared_ptr<const Graph>>
      value;
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;  // "" for ONNX, "fusebench" for the engine's fused ops
  std::vector<std::string> inputs;   // "" marks an omitted optional input
  std::vector<std::string> outputs;
  std::map<std::string, Attribute> attrs;
  std::vector<std::string> sources;  // ONNX node names this node stands for
  int64_t opset = 0;  // the model's opset for the node's domain (ops changed meaning across opsets)
  // The precision its kernel computes in, and why (engine/passes/precision_assignment.cpp
  // sets both; a fused node takes its sources'). The reason is "" until assigned.
  Precision precision = Precision::FP32;
  std::string precision_reason;
  // In a build for a device: the node runs on the CPU backend, which the device backend
  // has no kernel for (engine/passes/device_placement.cpp sets it and puts copies around).
  bool on_host = false;

  // Attribute accessors with ONNX defaults; a present attribute of the wrong kind is an Error.
  int64_t attr_int(const std::string& key, int64_t def) const;
  float attr_float(const std::string& key, float def) const;
  std::string attr_string(const std::string& key, const std::string& def) const;
  std::vector<int64_t> attr_ints(const std::string& key, const std::vector<int64_t>& def = {}) const;
  std::vector<float> attr_floats(const std::string& key, const std::vector<float>& def = {}) const;
  const Tensor* attr_tensor(const std::string& key) const;
  bool has_attr(const std::string& key) const { return attrs.count(key) != 0; }
  // "node 'name' (OpType)": how errors name a node.
  std::string describe() const;
  // A plugin's op: its domain is neither ONNX's nor the engine's own ("fusebench"). The
  // engine never fuses, folds or rewrites such a node (engine/plugin/).
  bool is_plugin() const;
};

struct ValueInfo {
  DType dtype = DType::Undefined;
  Shape shape;
  bool shape_known = false;
};

struct GraphInput {
  std::string name;
  DType dtype;
  // Dimensions as declared; -1 where the model leaves them symbolic (dim_param or unset).
  Shape dims;
  std::vector<std::string> dim_params;  // "" where the dimension is fixed
};

// The use-def index (producer and readers of every value) is kept by the Graph, so
// passes ask in O(1) instead of scanning the nodes. It is built on first use; the Graph's
// own edits (replace_nodes, remove_node, rewire_input, rename_output, compact) keep it current. Code
// that edits `nodes` directly calls nodes_changed() before asking again.
//
// replace_nodes and remove_node leave removed nodes in place, marked removed (so indices
// held by a pass stay valid), until compact() erases them; the index never reports them.
class Graph {
 public:
  std::string name;
  int64_t opset = 0;
  std::vector<GraphInput> inputs;
  std::vector<std::string> outputs;
  std::vector<Node> nodes;                     // in topological order
  std::map<std::string, Tensor> initializers;  // constant tensors by value name
  std::map<std::string, ValueInfo> values;     // every value's dtype and shape
  std::vector<std::string> import_log;         // what import changed (opset conversion); goes into the build log

  bool is_initializer(const std::string& v) const { return initializers.count(v) != 0; }
  bool is_graph_output(const std::string& v) const;
  const ValueInfo& value(const std::string& v) const;
  // The node producing `v`, or nullptr for graph inputs and initializers.
  const Node* producer(const std::string& v) const;
  // Its index, or -1.
  int producer_index(const std::string& v) const;
  // Indices of the nodes reading `v`, ascending, each once (valid until the next edit).
  const std::vector<size_t>& consumers(const std::string& v) const;
  // Sorts `nodes` topologically; throws Error naming a node on a cycle or a missing input.
  void topological_sort();
  // A fresh value name with the given stem that is not used yet.
  std::string unique_value_name(const std::string& stem) const;

  // Replaces the nodes at `indices` with `fused`, placed where the last of them was (the
  // others are marked removed); fused.sources becomes the union of their sources, in
  // graph order, and fused takes the last one's opset (when unset) and precision.
  void replace_nodes(std::vector<size_t> indices, Node fused);
  // Marks the node removed; its outputs then have no producer.
  void remove_node(size_t i);
  // Node i reads `to` wherever it read `from`.
  void rewire_input(size_t i, const std::string& from, const std::string& to);
  // Node i writes `to` where it wrote `from`.
  void rename_output(size_t i, const std::string& from, const std::string& to);
  bool removed(size_t i) const { return i < removed_.size() && removed_[i]; }
  // Erases the removed nodes (indices change).
  void compact();
  // Drops the index after a direct edit of `nodes`.
  void nodes_changed();

 private:
  // Producer and readers of every value; a copy of the Graph starts without one.
  struct UseDefIndex {
    std::unordered_map<std::string, size_t> producer;
    std::unordered_map<std::string, std::vector<size_t>> readers;
  };
  struct UseDefCache {
    UseDefCache() = default;
    UseDefCache(const UseDefCache&) {}
    UseDefCache& operator=(const UseDefCache&) {
      index.reset();
      return *this;
    }
    UseDefCache(UseDefCache&&) = default;
    UseDefCache& operator=(UseDefCache&&) = default;
    std::unique_ptr<UseDefIndex> index;
  };
  UseDefIndex& uses() const;
  void index_node(UseDefIndex& u, size_t i) const;
  void unindex_node(UseDefIndex& u, size_t i) const;

  mutable UseDefCache uses_;
  std::vector<bool> removed_;  // empty when nothing is marked removed
};

}  // namespace fb
