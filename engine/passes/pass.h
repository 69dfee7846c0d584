// What every graph pass shares: the context it runs in, the one legality check for
// fusion (ggml's can_fuse, in one place), and the rewrite that replaces matched nodes
// with one fused node while keeping their source lists.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "engine/builder/build_config.h"
#include "engine/ir/graph.h"

namespace fb {

struct PassContext {
  Graph& graph;
  const BuildConfig& config;
  std::map<std::string, Tensor>& known;  // build-time values of small tensors (from shape binding)
  std::vector<std::string>& log;         // the build log: passes append "pattern fired where" lines
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

// Replaces the nodes at `indices` with `fused`, placed where the last of them was;
// fused.sources becomes the union of their sources, in graph order.
void replace_nodes(Graph& g, std::vector<size_t> indices, Node fused);

// The index of the single consumer of v, or -1.
int single_consumer(const Graph& g, const std::string& v);
// A scalar float constant's value (an initializer or known value with one element).
bool constant_scalar(const PassContext& ctx, const std::string& v, float* out);

}  // namespace fb
