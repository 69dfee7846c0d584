// The plugins fusebench ships, written against the public API (include/fusebench/plugin.h)
// like any user's, and registered as built in (engine/plugin/plugin_library.cpp).
#pragma once
#include <memory>

#include <fusebench/plugin.h>

namespace fb {

inline constexpr const char* kShippedPluginDomain = "fusebench.plugin";

std::unique_ptr<fusebench::plugin::PluginCreator> make_copy_plugin_creator();
std::unique_ptr<fusebench::plugin::PluginCreator> make_rms_norm_plugin_creator();

}  // namespace fb
