// Plugins as rows of an engine's op registry (engine/ops/op_registry.h): the shipped ones
// join every registry; a case's libraries are added to a fresh one before it is sealed.
// A plugin must live in its own domain — not ONNX's ("", "ai.onnx") nor the engine's
// ("fusebench") — so it never shadows a built-in op and the engine knows it for a plugin
// (Node::is_plugin: never fused, folded or rewritten).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/ops/op_registry.h"
#include "engine/plugin/plugin_library.h"

namespace fb {

// Adds one row per creator; an Error names the plugin and its origin for a reserved
// domain or an op the registry has already.
void add_plugin_ops(OpRegistry& r, const std::vector<PluginCreatorEntry>& creators);

// The shipped plugins (engine/plugin/shipped/); part of OpRegistry::with_builtin_ops().
void register_shipped_plugins(OpRegistry& r);

// A sealed registry with every built-in op, the shipped plugins and the plugins of these
// libraries (loaded by path; OpRegistry::builtin() when there are none). Errors name the
// library (missing, not a plugin library, another API version, a clash).
std::shared_ptr<const OpRegistry> registry_with_plugins(const std::vector<std::string>& libraries);

}  // namespace fb
