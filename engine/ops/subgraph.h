// Running a subgraph eagerly, node by node, on the op table's kernels: what If and Loop do
// with their bodies and what the engine's eager region does with the nodes whose shapes
// depend on data. Outer-scope values a subgraph reads arrive as the node's extra inputs,
// named in its "fusebench.captures" attribute.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/ops/op_registry.h"

namespace fb {

// The graph attribute `key` of `n`; Error when missing or not a graph.
const Graph& subgraph_attr(const Node& n, const char* key);

// The names in "fusebench.captures" (none without it): the subgraphs' names for the
// node's last inputs; an Error when they cannot be (a malformed plan).
const std::vector<std::string>& capture_names(const Node& n);

// The node's own inputs, without the captured outer values appended after them.
size_t explicit_input_count(const Node& n);

// Outer values by the names the subgraphs use (the "fusebench.captures" inputs).
std::map<std::string, Tensor> captured_values(const OpContext& c);

// Runs node `index` of a subgraph in place of the op table's kernel (the engine's eager
// region: prebuilt convolutions over constant weights), filling `outs`; false leaves the
// node to the op table.
using NodeRunner = std::function<bool(size_t index, const Node& n, const std::vector<const Tensor*>& ins, std::vector<Tensor>& outs)>;

// Runs `g`'s nodes, except those marked in `skip`, with `env` holding its inputs and outer
// values, each through `runner` first where one is given; every value they compute is
// added to `env`.
void run_nodes(const OpContext& c, const Graph& g, std::map<std::string, Tensor>& env, const std::vector<bool>& skip = {},
               const NodeRunner& runner = {});

// The value `name` in `env`; Error naming it as a subgraph output never computed.
const Tensor& subgraph_value(const std::map<std::string, Tensor>& env, const std::string& name);

// Runs `g` with `env` holding its inputs and outer values, its nodes from the registry
// the enclosing node came from; returns its outputs in order. Every output is allocated
// here, as the reference executor allocates.
std::vector<Tensor> run_subgraph(const OpContext& c, const Graph& g, std::map<std::string, Tensor> env);

}  // namespace fb
