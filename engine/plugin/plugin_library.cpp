#include "engine/plugin/plugin_library.h"

#include <dlfcn.h>

#include <filesystem>
#include <map>
#include <mutex>

#include "engine/ir/error.h"
#include "engine/plugin/shipped/shipped_plugins.h"

namespace fb {

namespace {

namespace api = fusebench::plugin;

class CollectingRegistrar : public api::Registrar {
 public:
  CollectingRegistrar(std::string origin, std::vector<PluginCreatorEntry>& out) : origin_(std::move(origin)), out_(out) {}
  void add(std::unique_ptr<api::PluginCreator> creator) override {
    if (!creator) throw Error(origin_ + ": the plugin library registered a null creator");
    out_.push_back(PluginCreatorEntry{std::shared_ptr<const api::PluginCreator>(std::move(creator)), origin_});
  }

 private:
  std::string origin_;
  std::vector<PluginCreatorEntry>& out_;
};

std::vector<PluginCreatorEntry> open_library(const std::string& path) {
  if (!std::filesystem::exists(path)) throw Error("plugin library '" + path + "': no such file");
  // RTLD_LOCAL: two libraries may use the same symbol names for their own classes.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw Error("plugin library '" + path + "': cannot be loaded: " + dlerror());
  // Never dlclose: plugins made from it may outlive any one engine.
  using VersionFn = int (*)();
  using RegisterFn = void (*)(api::Registrar*);
  auto version = reinterpret_cast<VersionFn>(dlsym(handle, FUSEBENCH_PLUGIN_VERSION_SYMBOL));
  auto reg = reinterpret_cast<RegisterFn>(dlsym(handle, FUSEBENCH_PLUGIN_REGISTER_SYMBOL));
  if (!version || !reg)
    throw Error("plugin library '" + path + "' is not a fusebench plugin library: it does not export " +
                (!version ? FUSEBENCH_PLUGIN_VERSION_SYMBOL : FUSEBENCH_PLUGIN_REGISTER_SYMBOL) +
                " (define FUSEBENCH_PLUGIN_LIBRARY(...) from fusebench/plugin.h)");
  const int v = version();
  if (v != api::kApiVersion)
    throw Error("plugin library '" + path + "' was built against fusebench plugin API version " + std::to_string(v) +
                ", but this fusebench has plugin API version " + std::to_string(api::kApiVersion) +
                "; rebuild the library against this fusebench's include/fusebench/plugin.h");
  std::vector<PluginCreatorEntry> creators;
  CollectingRegistrar registrar(path, creators);
  try {
    reg(&registrar);
  } catch (const std::exception& e) {
    throw Error("plugin library '" + path + "': its register function failed: " + e.what());
  } catch (...) {
    throw Error("plugin library '" + path + "': its register function threw a non-standard exception");
  }
  if (creators.empty()) throw Error("plugin library '" + path + "' registered no plugins");
  return creators;
}

}  // namespace

bool PluginCreatorEntry::runs_on(Device device) const {
  try {
    return creator->runs_on(device == Device::Cuda ? fusebench::plugin::Device::Cuda : fusebench::plugin::Device::Cpu);
  } catch (...) {
    return false;
  }
}

std::string PluginCreatorEntry::qualified_name() const {
  const std::string d = creator->domain();
  return d.empty() ? creator->op_type() : d + "." + creator->op_type();
}

const std::vector<PluginCreatorEntry>& load_plugin_library(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::vector<PluginCreatorEntry>> loaded;  // by absolute path
  std::error_code ec;
  const std::string key = std::filesystem::absolute(path, ec).lexically_normal().string();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = loaded.find(key);
  if (it == loaded.end()) it = loaded.emplace(key, open_library(key)).first;
  return it->second;
}

const std::vector<PluginCreatorEntry>& builtin_plugins() {
  static const std::vector<PluginCreatorEntry> shipped = [] {
    std::vector<PluginCreatorEntry> v;
    for (auto* make : {make_copy_plugin_creator, make_rms_norm_plugin_creator})
      v.push_back(PluginCreatorEntry{std::shared_ptr<const api::PluginCreator>(make()), "built in"});
    return v;
  }();
  return shipped;
}

}  // namespace fb
