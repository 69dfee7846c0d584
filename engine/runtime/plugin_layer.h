// An engine layer run by a plugin: its inputs and outputs are arena slots, its
// workspace a buffer the arena planner placed for this layer alone, its threads the
// engine's (the case's task arena); on a GPU, device memory and the backend's stream.
#pragma once
#include <memory>
#include <string_view>

#include "engine/plugin/plugin_op.h"
#include "engine/runtime/engine.h"
#include "engine/backend/layer.h"

namespace fb {

inline constexpr const char* kPluginKernelPrefix = "plugin ";

class PluginLayer : public Layer {
 public:
  PluginLayer(std::shared_ptr<PluginOp> op, std::vector<const Tensor*> ins, std::vector<Tensor*> outs, void* workspace,
              size_t workspace_bytes, Device device = Device::Host, void* stream = nullptr)
      : op_(std::move(op)), ins_(std::move(ins)), outs_(std::move(outs)), workspace_(workspace),
        workspace_bytes_(workspace_bytes), device_(device), stream_(stream) {}
  void run() override { op_->execute(ins_, outs_, workspace_, workspace_bytes_, device_, stream_); }
  // "plugin fusebench.plugin.Copy (built in)"
  std::string kernel() const override { return kPluginKernelPrefix + op_->qualified_name() + " (" + op_->origin() + ")"; }

 private:
  std::shared_ptr<PluginOp> op_;
  std::vector<const Tensor*> ins_;
  std::vector<Tensor*> outs_;
  void* workspace_;
  size_t workspace_bytes_;
  Device device_;
  void* stream_;
};

// Whether an engine layer is run by a plugin (by its kernel name; a GPU build runs a
// plugin on the CPU, its kernel then named "cpu:" + the plugin's).
inline bool is_plugin_layer(const LayerInfo& l) {
  const std::string_view kernel = std::string_view(l.kernel).substr(l.kernel.rfind("cpu:", 0) == 0 ? 4 : 0);
  return kernel.substr(0, std::string_view(kPluginKernelPrefix).size()) == kPluginKernelPrefix;
}

}  // namespace fb
