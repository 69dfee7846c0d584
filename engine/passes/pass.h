// What every graph pass shares: the context it runs in, the one legality check for
// fusion (can_fuse: ggml's ggml_can_fuse, TVM's fuse-ops limits, in one place), the
// driver that owns iteration (ONNX Runtime's GraphTransformer: a rule only says what it
// matches and what replaces it), and the fusion events the build log and inspect read.
//
// A fusion pass is a Rule: given a root node, the candidate matches there, preferred
// first. run_fusion_rule visits every node in graph order, asks the rule, applies the
// first candidate can_fuse allows (Graph::replace_nodes, which keeps the use-def index
// current), and repeats until a sweep changes nothing: after any change it sweeps the
// whole graph again, to a fixed point. Removed nodes stay marked in place until the pass
// ends, so indices a rule holds stay valid. Passes that are not rules (layout, precision,
// int8 lowering, placement) walk the graph themselves.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/config/build_config.h"
#include "engine/ir/graph.h"
#include "engine/ops/op_registry.h"
#include "engine/passes/fusion_event.h"

namespace fb {

class Backend;

struct PassContext {
  Graph& graph;
  const BuildConfig& config;
  std::map<std::string, Tensor>& known;  // build-time values of small tensors (from shape binding)
  std::vector<std::string>& log;         // the build log: passes append "pattern fired where" lines
  const OpRegistry& ops;                 // the engine's op table (plugins' ops included)
  std::vector<FusionEvent>* events = nullptr;  // where fusion events go (also logged), when kept
  std::string pass{};                    // the running pass's name (the builder sets it)
  // The backend the layers will run on: which precisions it has kernels for (nullptr: the CPU's).
  const Backend* backend = nullptr;
};

struct Pass {
  const char* name;
  int (*run)(PassContext&);  // returns how many rewrites it made
};

// One candidate: these nodes become `fused` (its sources, opset and precision are filled
// in from theirs). `log` is the build-log line when it is applied.
struct FusionMatch {
  std::vector<size_t> nodes;
  Node fused;
  std::string log;
  std::map<std::string, Tensor> initializers{};  // new constants `fused` reads, added when applied
};

// "" when the match may become one layer, else why not:
//  - no matched node is excluded (by name glob or op type);
//  - every value a matched node writes and the fused node does not is read only inside
//    the match and is not a graph output (it disappears);
//  - no value written and read inside the match is a partition point (fusion may not
//    cross it, even where the fused node still writes it);
//  - every matched node has the same precision (a precision constraint is never
//    overridden by fusion: precision_assignment decided each node's);
//  - the match has at most `max_nodes` nodes (0: no cap).
std::string fusion_refusal(const PassContext& ctx, const FusionMatch& m, size_t max_nodes = 0);
inline bool can_fuse(const PassContext& ctx, const FusionMatch& m, size_t max_nodes = 0) {
  return fusion_refusal(ctx, m, max_nodes).empty();
}

// A fusion rule: the candidate matches rooted at node `root`, preferred first (a longer
// form before a shorter one); empty when the pattern is not there. It reads the graph
// through producer()/consumers() and never edits it.
using Rule = std::vector<FusionMatch> (*)(const PassContext& ctx, size_t root);
// Runs `rule` to a fixed point (above); records an event for every fusion and for every
// root whose candidates were all refused. Returns the number of fusions.
int run_fusion_rule(PassContext& ctx, Rule rule);

// The node may take part in a fusion: not a plugin (Node::is_plugin), not excluded by
// name glob or op type.
bool node_fusible(const Node& n, const BuildConfig& c);
// v is one of the configuration's partition points.
bool is_partition_point(const BuildConfig& c, const std::string& v);
// Shell-style glob: '*' any run, '?' one character.
bool glob_match(const std::string& pattern, const std::string& s);

// A node of the engine's own "fusebench" domain, for a pass to put in place of a match.
Node fusebench_node(std::string name, std::string op_type, std::vector<std::string> inputs,
                    std::vector<std::string> outputs);

// Every value name n reads inside its If/Loop/Scan bodies (outer values are read by name
// there, out of sight of consumers()); an over-approximation that only keeps more alive.
void add_subgraph_reads(const Node& n, std::set<std::string>& reads);
// Removes the initializers no node (nor body) reads and that are not graph outputs.
void remove_unread_initializers(Graph& g);

// The index of the single reader of v, or -1 (structure only: legality is can_fuse's).
int single_consumer(const Graph& g, const std::string& v);
// v's build-time value: an initializer or a known value (nullptr for anything else).
const Tensor* constant_value(const PassContext& ctx, const std::string& v);
// A scalar float constant's value (an initializer or known value with one element).
bool constant_scalar(const PassContext& ctx, const std::string& v, float* out);
// v is a scalar float constant within 1e-4 (relative above 1) of `expected`: how patterns
// recognise the constants exporters write (√2, 0.5, 0.044715...) in float.
bool constant_near(const PassContext& ctx, const std::string& v, float expected);
// An ONNX-domain node of this op type (n may be null).
bool is_onnx_op(const Node* n, const char* op_type);

}  // namespace fb
