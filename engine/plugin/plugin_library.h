// Plugin creators and where they came from: the shipped ones (built in) and those of
// shared libraries loaded by path. A library is checked before anything of it runs: it
// must export the API version and register functions, and its version must be this
// fusebench's (include/fusebench/plugin.h); otherwise an Error names the file and both
// versions. Loaded libraries stay loaded for the process' life, since engines keep the
// plugins they made.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <fusebench/plugin.h>

#include "engine/ir/tensor.h"

namespace fb {

struct PluginCreatorEntry {
  std::shared_ptr<const fusebench::plugin::PluginCreator> creator;
  std::string origin;  // "built in" or the library's path
  // "domain.OpType" (or "OpType" in the ONNX domain): how messages name the plugin.
  std::string qualified_name() const;
  // Whether its plugins run on `device` (the creator's answer; false if it throws).
  bool runs_on(Device device) const;
};

// The creators of the library at `path` (loaded on first use; the same list after).
// Throws fb::Error naming the path: file missing or not loadable (dlerror's text), not a
// fusebench plugin library, built against another API version, or its register function
// failed.
const std::vector<PluginCreatorEntry>& load_plugin_library(const std::string& path);

// The plugins fusebench ships (engine/plugin/shipped/), always available.
const std::vector<PluginCreatorEntry>& builtin_plugins();

}  // namespace fb
