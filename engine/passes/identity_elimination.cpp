// Identity and inference-Dropout elimination: y = Identity(x), y = Dropout(x) (not
// training, mask unused) and y = Concat(x) (one input: a DenseNet's first layer concatenates
// the block's input alone) are removed and y's readers read x instead.
//
//      x ──▶ Identity | Dropout | Concat ──▶ y ──▶ readers     ⇒     x ──▶ readers
//
// When y is a graph output its name must survive, so x is renamed to y instead; that is
// only possible when x is produced by a node and is not itself a graph output (an Identity
// from an input or initializer to an output stays: the engine runs it as a view). A node
// excluded by name or op type stays, and so does one whose x or y is a partition point,
// since that tensor's name is what the user asked to keep. Graphs with If/Loop/Scan bodies
// are left alone (below).
#include <set>

#include "engine/passes/passes.h"

namespace fb {

namespace {

// Dropout is the identity at inference: no training_mode input, or a constant false one,
// or a constant ratio of 0; and nothing reads its mask.
bool inference_dropout(const PassContext& ctx, const Node& n) {
  const Graph& g = ctx.graph;
  if (n.outputs.size() > 1 && !n.outputs[1].empty() &&
      (g.is_graph_output(n.outputs[1]) || !g.consumers(n.outputs[1]).empty()))
    return false;
  if (n.inputs.size() < 3 || n.inputs[2].empty()) return true;
  const Tensor* training = constant_value(ctx, n.inputs[2]);
  if (training && training->numel() == 1 && training->scalar_as_double() == 0.0) return true;
  const Tensor* ratio = n.inputs[1].empty() ? nullptr : constant_value(ctx, n.inputs[1]);
  return ratio && ratio->numel() == 1 && ratio->scalar_as_double() == 0.0;
}

// If/Loop/Scan bodies may read outer values by name, out of sight of consumers():
// renaming or rerouting a value would break them, so such graphs are left alone.
bool has_subgraphs(const Graph& g) {
  std::set<std::string> reads;
  for (const Node& n : g.nodes) add_subgraph_reads(n, reads);
  return !reads.empty();
}

// Every reader of `from` reads `to` instead (through the use-def index: no rescan).
void reroute_readers(Graph& g, const std::string& from, const std::string& to) {
  const std::vector<size_t> readers = g.consumers(from);  // a copy: rewiring edits the index
  for (size_t r : readers) g.rewire_input(r, from, to);
}

void rename_value(Graph& g, const std::string& from, const std::string& to) {
  g.rename_output(size_t(g.producer_index(from)), from, to);
  reroute_readers(g, from, to);
  g.values[to] = g.values.at(from);
  g.values.erase(from);
}

}  // namespace

int identity_elimination(PassContext& ctx) {
  Graph& g = ctx.graph;
  const BuildConfig& cfg = ctx.config;
  int removed = 0;
  if (has_subgraphs(g)) return 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.removed(i)) continue;
    const Node& n = g.nodes[i];
    const bool identity = n.domain.empty() && n.op_type == "Identity";
    const bool dropout = n.domain.empty() && n.op_type == "Dropout";
    const bool lone_concat = n.domain.empty() && n.op_type == "Concat" && n.inputs.size() == 1;
    if ((!identity && !dropout && !lone_concat) || n.inputs.empty() || n.inputs[0].empty() || n.outputs.empty()) continue;
    if (!node_fusible(n, cfg) || (dropout && !inference_dropout(ctx, n))) continue;
    const std::string x = n.inputs[0], y = n.outputs[0];
    if (is_partition_point(cfg, x) || is_partition_point(cfg, y)) continue;
    if (g.is_graph_output(y)) {
      // y keeps its name: x must be a node's output that nothing else needs by name.
      if (!g.producer(x) || g.is_graph_output(x)) continue;
      const std::string name = n.name, op = n.op_type;
      g.remove_node(i);
      rename_value(g, x, y);
      ctx.log.push_back("  identity-elimination: removed '" + name + "' (" + op + "), '" + x + "' renamed to output '" + y + "'");
    } else {
      const std::string name = n.name, op = n.op_type;
      g.remove_node(i);
      reroute_readers(g, y, x);
      ctx.log.push_back("  identity-elimination: removed '" + name + "' (" + op + "), readers of '" + y + "' read '" + x + "'");
    }
    ++removed;
  }
  g.compact();
  return removed;
}

}  // namespace fb
