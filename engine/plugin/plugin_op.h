// One node run by a plugin: the plugin made from the node's attributes, behind the
// engine's interfaces (shape inference on ValueInfo, execution on Tensors with a
// workspace and the current thread pool). Whatever the plugin does wrong — returns an
// error Status, throws, infers nonsense — becomes an fb::Error naming the node, the plugin
// and where it came from, so one case fails and nothing else does.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/plugin/plugin_library.h"

namespace fb {

class PluginOp {
 public:
  // Creates the plugin for `node`; throws Error naming both when the creator refuses.
  PluginOp(const Node& node, PluginCreatorEntry entry);

  // Output dtypes and shapes; checks the plugin supports plain layout at every position and
  // the dtypes given (the only formats the engine hands plugins today).
  std::vector<ValueInfo> infer(const std::vector<const ValueInfo*>& inputs) const;
  size_t workspace_size(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const;
  bool output_may_alias_input(size_t output) const;
  // Runs the plugin on the current thread pool (the caller's task arena); on a GPU, queued
  // on `stream` (a cudaStream_t) with the tensors in device memory.
  void execute(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs, void* workspace,
               size_t workspace_bytes, Device device = Device::Host, void* stream = nullptr);

  // "plugin 'fusebench.plugin.Copy' (built in)": how messages name it.
  std::string describe() const;
  std::string qualified_name() const { return entry_.qualified_name(); }
  const std::string& origin() const { return entry_.origin; }

 private:
  [[noreturn]] void fail(const std::string& what) const;
  std::string node_desc_;
  PluginCreatorEntry entry_;
  std::unique_ptr<fusebench::plugin::Plugin> plugin_;
};

// Runs one plugin node eagerly on fresh outputs, as the reference executor runs every op
// (with a plugin made for the call). `reusable_input0`, when given, is input 0 dying at
// this node: a plugin that allows it writes output 0 over it, as the engine would.
std::vector<Tensor> evaluate_plugin(const Node& node, const PluginCreatorEntry& entry,
                                    const std::vector<const Tensor*>& inputs, const Tensor* reusable_input0);

}  // namespace fb
