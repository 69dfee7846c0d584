#include "engine/ops/plugin_rows.h"

namespace fb {

void add_plugin_ops(OpRegistry& r, const std::vector<PluginCreatorEntry>& creators) {
  for (const PluginCreatorEntry& e : creators) {
    OpDef def;
    def.domain = e.creator->domain();
    def.op_type = e.creator->op_type();
    const std::string name = "plugin '" + e.qualified_name() + "' (" + e.origin + ")";
    if (def.domain.empty() || def.domain == "ai.onnx" || def.domain == "fusebench")
      throw Error(name + ": a plugin needs a domain of its own, not ONNX's or 'fusebench' (e.g. 'mycompany')");
    if (def.op_type.empty()) throw Error(name + ": the plugin has no op type");
    def.plugin = std::make_shared<const PluginCreatorEntry>(e);
    try {
      r.add(std::move(def));
    } catch (const Error& err) {
      throw Error(name + ": " + err.what());
    }
  }
}

void register_shipped_plugins(OpRegistry& r) { add_plugin_ops(r, builtin_plugins()); }

std::shared_ptr<const OpRegistry> registry_with_plugins(const std::vector<std::string>& libraries) {
  if (libraries.empty()) return OpRegistry::builtin();
  auto r = std::make_shared<OpRegistry>(OpRegistry::with_builtin_ops());
  for (const std::string& lib : libraries) add_plugin_ops(*r, load_plugin_library(lib));
  r->seal();
  return r;
}

}  // namespace fb
