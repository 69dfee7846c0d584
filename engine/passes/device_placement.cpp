// Device placement, the last pass of a build for a device (TensorRT's and ONNX Runtime's
// CPU fallback): each node runs on the build's backend where it has a kernel for it, and
// on the CPU backend otherwise (Node::on_host), with copies between the two memories
// inserted as layers of their own, so inspect shows them and profile times them:
//
//   [device] ─▶ CopyToHost ─▶ [host: NonMaxSuppression] ─▶ CopyToDevice ─▶ [device]
//
// A value crosses once per direction however many nodes read it there; a view (Reshape)
// of a value written on the host stays on the host, as a copy there and back would cost
// two transfers for no kernel. Graph inputs arrive on the device; a graph output written
// on the host is read from there (Engine::outputs); initializers are on both sides (the
// engine uploads them and keeps the host copy). Precision mode obey runs every layer where it was asked to, so there a node the
// device cannot run refuses the build, naming it and its op.
#include "engine/backend/backend.h"
#include "engine/passes/passes.h"
#include "engine/plugin/plugin_library.h"

namespace fb {

namespace {
std::string qualified_op(const Node& n) { return n.domain.empty() ? n.op_type : n.domain + "." + n.op_type; }
}  // namespace

int device_placement(PassContext& ctx) {
  if (!ctx.backend || ctx.backend->device() == Device::Host) return 0;
  const Backend& device = *ctx.backend;
  Graph& g = ctx.graph;
  const bool obey = ctx.config.precision_mode == PrecisionMode::Obey;
  // A host node's outputs keep their names (mark-all's tensors are named as on the CPU);
  // the copies take new ones.
  std::map<std::string, size_t> host_producer;     // value written on the host -> its node in `out`
  std::map<std::string, std::string> host_copy;    // device value -> its copy on the host
  std::map<std::string, std::string> device_copy;  // host value -> its copy on the device
  std::map<std::string, int> fallback_ops;         // op -> nodes
  std::vector<Node> out;
  int copies = 0;
  // `served`: the host node the copy is for (its reader, or for a copy back its producer),
  // whose ONNX nodes the copy is credited to: profile rolls its time up there.
  auto copy_node = [&](const std::string& from, const char* op, const Node& served) {
    const std::string to = g.unique_value_name(from + (op == std::string("CopyToHost") ? "/host" : "/device"));
    g.values[to] = g.value(from);
    Node c = fusebench_node("device_copy/" + to, op, {from}, {to});
    c.sources = served.sources;
    c.opset = 1;
    const DType t = g.value(from).dtype;  // it moves the tensor's bytes as they are
    c.precision = t == DType::Float16 ? Precision::FP16 : t == DType::BFloat16 ? Precision::BF16 : Precision::FP32;
    c.precision_reason = "copy for " + served.describe() + " on the CPU";
    out.push_back(std::move(c));
    ++copies;
    return to;
  };
  for (Node& n : g.nodes) {
    const OpDef& def = op_for(n, ctx.ops);
    // A plugin runs where its creator says it can; any other node where the backend has a kernel.
    bool host = def.plugin ? !def.plugin->runs_on(device.device()) : device.supported_precisions(n, def).empty();
    if (host && obey)
      throw Error(n.describe() + ": the " + device.device_name() + " backend has no kernel for " + qualified_op(n) +
                  ", and precision mode obey runs every layer on the build's device (prefer runs it on the CPU)");
    if (host && n.domain == "fusebench" && n.op_type == "EagerRegion")
      throw Error(n.describe() + ": shapes that depend on data (an eager region) do not run in a build for " +
                  device.device_name() + " yet; build it for the CPU");
    if (!host && def.alias_input0 && !n.inputs.empty() && host_producer.count(n.inputs[0])) host = true;
    if (!host) {
      for (std::string& v : n.inputs) {
        const auto producer = host_producer.find(v);
        if (v.empty() || producer == host_producer.end()) continue;
        if (!device_copy.count(v)) {
          if (!g.value(v).shape_known)
            throw Error(n.describe() + ": its input '" + v + "' comes from the CPU with a shape known only when it runs, "
                        "which a build for " + device.device_name() + " cannot copy yet");
          const Node producer_node = out[producer->second];
          device_copy[v] = copy_node(v, "CopyToDevice", producer_node);
        }
        v = device_copy.at(v);
      }
      out.push_back(std::move(n));
      continue;
    }
    n.on_host = true;
    if (!def.alias_input0) ++fallback_ops[qualified_op(n)];
    for (std::string& v : n.inputs) {
      if (v.empty() || g.is_initializer(v) || host_producer.count(v)) continue;
      if (!host_copy.count(v)) host_copy[v] = copy_node(v, "CopyToHost", n);
      v = host_copy.at(v);
    }
    for (const std::string& o : n.outputs)
      if (!o.empty()) host_producer[o] = out.size();  // where n goes
    out.push_back(std::move(n));
  }
  g.nodes = std::move(out);
  g.nodes_changed();
  if (!fallback_ops.empty()) {
    std::string ops;
    int nodes = 0;
    for (const auto& [op, count] : fallback_ops) {
      ops += (ops.empty() ? "" : ", ") + op + (count > 1 ? " x" + std::to_string(count) : "");
      nodes += count;
    }
    ctx.log.push_back("device placement: " + std::to_string(nodes) + " node(s) on the CPU, which the " +
                      device.device_name() + " backend has no kernel for (" + ops + "), " + std::to_string(copies) +
                      " copy layer(s) between the two memories");
  }
  return copies;
}

}  // namespace fb
