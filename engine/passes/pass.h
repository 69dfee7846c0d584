// What every graph pass shares: the context it runs in, the one legality check for
// fusion (ggml's can_fuse, in one place), and the rewrite that replaces matched nodes
// with one fused node while keeping their source lists.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/builder/build_config.h"
#include "engine/ir/graph.h"
#include "engine/ops/op_registry.h"

namespace fb {

struct PassContext {
  Graph& graph;
  const BuildConfig& config;
  std::map<std::string, Tensor>& known;  // build-time values of small tensors (from shape binding)
  std::vector<std::string>& log;         // the build log: passes append "pattern fired where" lines
  const OpRegistry& ops;                 // the engine's op table (plugins' ops included)
};

struct Pass {
  const char* name;
  int (*run)(PassContext&);  // returns how many rewrites it made
};

// The node may take part in a fusion: not excluded by name glob or op type.
bool node_fusible(const Node& n, const BuildConfig& c);
// The value may disappear inside a fused layer: exactly one consumer, not a graph
// output, not a partition point.
bool value_fusible(const Graph& g, const std::string& v, const BuildConfig& c);
// Shell-style glob: '*' any run, '?' one character.
bool glob_match(const std::string& pattern, const std::string& s);

// A node of the engine's own "fusebench" domain, for a pass to put in place of a match.
Node fusebench_node(std::string name, std::string op_type, std::vector<std::string> inputs,
                    std::vector<std::string> outputs);

// Replaces the nodes at `indices` with `fused`, placed where the last of them was;
// fused.sources becomes the union of their sources, in graph order.
void replace_nodes(Graph& g, std::vector<size_t> indices, Node fused);

// Every value name n reads inside its If/Loop/Scan bodies (outer values are read by name
// there, out of sight of consumers()); an over-approximation that only keeps more alive.
void add_subgraph_reads(const Node& n, std::set<std::string>& reads);
// Removes the initializers no node (nor body) reads and that are not graph outputs.
void remove_unread_initializers(Graph& g);

// The index of the single consumer of v, or -1.
int single_consumer(const Graph& g, const std::string& v);
// A scalar float constant's value (an initializer or known value with one element).
bool constant_scalar(const PassContext& ctx, const std::string& v, float* out);
// v is a scalar float constant within 1e-4 (relative above 1) of `expected`: how patterns
// recognise the constants exporters write (√2, 0.5, 0.044715...) in float.
bool constant_near(const PassContext& ctx, const std::string& v, float expected);
// An ONNX-domain node of this op type (n may be null).
bool is_onnx_op(const Node* n, const char* op_type);

}  // namespace fb
