#include "engine/runtime/engine.h"

#include "engine/ir/memory_limit.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

#include "engine/ops/op_registry.h"
#include "engine/runtime/arena_planner.h"
#include "engine/runtime/device_copy_layer.h"
#include "engine/runtime/plugin_layer.h"

namespace fb {

namespace {
std::string qualified(const Node& n) { return n.domain.empty() ? n.op_type : n.domain + "." + n.op_type; }
bool is_copy(const Node& n, const char* op) { return n.domain == "fusebench" && n.op_type == op; }
// A host copy of a tensor wherever it lives.
Tensor host_copy(const Tensor& t, const Backend& backend) {
  return t.device() == Device::Host ? t.clone() : backend.to_host(t);
}
}  // namespace

Engine::Engine(Graph optimized, const BuildConfig& config, std::vector<std::string> build_log, EngineKernels kernels)
    : Engine(std::move(optimized), config, std::move(build_log), std::move(kernels), nullptr) {}

Engine::Engine(Graph optimized, const BuildConfig& config, std::vector<std::string> build_log, EngineKernels kernels,
               const std::map<std::string, Tensor>* uploaded)
    : graph_(std::move(optimized)), config_(config), log_(std::move(build_log)), kernels_(std::move(kernels)) {
  if (!kernels_.ops->sealed()) throw Error("the engine's op registry must be sealed before the engine is built");
  if (!kernels_.backend) kernels_.backend = backend_named(config_.device);
  const Backend& backend = *kernels_.backend;
  const bool on_host = backend.device() == Device::Host;
  Graph& g = graph_;
  // A CUDA graph records device work only.
  if (config_.cuda_graph) {
    if (on_host)
      throw Error("cuda_graph: device '" + config_.device + "' records no graphs (only a GPU's engine does); build with \"cuda_graph\": false");
    for (const Node& n : g.nodes)
      if (n.on_host)
        throw Error("cuda_graph: node '" + n.name + "' (" + n.op_type + ") runs on the CPU, which a CUDA graph cannot record; build with \"cuda_graph\": false");
  }
  // One slot per value.
  std::map<std::string, int> slot_of;
  auto slot = [&](const std::string& v) {
    auto it = slot_of.find(v);
    if (it != slot_of.end()) return it->second;
    const int s = int(slot_of.size());
    slot_of[v] = s;
    return s;
  };
  for (const GraphInput& in : g.inputs) input_slots_.push_back(slot(in.name));
  for (const auto& [name, _] : g.initializers) slot(name);
  for (const Node& n : g.nodes)
    for (const std::string& o : n.outputs)
      if (!o.empty()) slot(o);
  const int n_slots = int(slot_of.size());
  std::vector<std::string> name_of(n_slots);
  for (const auto& [name, s] : slot_of) name_of[s] = name;

  // Each slot is rooted in a graph input, an initializer, or an arena buffer; views
  // (Reshape and friends) share their input's root, and an in-place layer's output may
  // take over a dying input's buffer (arena_planner.h decides both).
  enum class Root { Input, Initializer, Arena };
  std::vector<PlanValue> plan_values(n_slots);
  for (const auto& [name, s] : slot_of) {
    const ValueInfo& vi = g.value(name);
    plan_values[s].dtype = vi.dtype;
    plan_values[s].shape = vi.shape;
    // every tensor materialized and kept under mark-all, as if each were an output
    plan_values[s].kept = g.is_graph_output(name) || config_.fusion == FusionLevel::MarkAll;
  }
  // Values in host memory on a device: what CPU fallback layers and copies to the host write.
  std::vector<bool> host_value(n_slots, false);
  for (const Node& n : g.nodes)
    if (n.on_host || is_copy(n, "CopyToHost"))
      for (const std::string& o : n.outputs)
        if (!o.empty()) host_value[slot_of.at(o)] = true;
  for (int s = 0; s < n_slots; ++s) plan_values[s].host = !on_host && host_value[s];
  for (int s : input_slots_) plan_values[s].home = PlanValue::Home::Input;
  for (const auto& [name, _] : g.initializers) plan_values[slot_of[name]].home = PlanValue::Home::Initializer;
  const int n_layers = int(g.nodes.size());
  std::vector<bool> is_view_layer(g.nodes.size(), false);
  std::vector<PlanLayer> plan_layers(g.nodes.size());
  // Plugin nodes: the plugin made for each (it says whether it runs in place and how much
  // workspace it needs: a buffer of the arena live during that layer alone).
  std::vector<std::shared_ptr<PluginOp>> plugin_ops(g.nodes.size());
  std::vector<int> workspace_value(g.nodes.size(), -1);  // plan value index, past the slots
  for (int i = 0; i < n_layers; ++i) {
    const Node& n = g.nodes[i];
    const OpDef& def = op_for(n, *kernels_.ops);
    PlanLayer& pl = plan_layers[i];
    for (const std::string& in : n.inputs) pl.inputs.push_back(in.empty() ? -1 : slot_of.at(in));
    for (const std::string& o : n.outputs) pl.outputs.push_back(o.empty() ? -1 : slot_of.at(o));
    is_view_layer[i] = pl.view = def.alias_input0 && !n.inputs.empty() && !n.inputs[0].empty();
    pl.in_place = def.in_place;
    if (def.in_place_input) {
      pl.in_place_only = def.in_place_input(n);
      pl.in_place = pl.in_place_only >= 0;
    }
    if (!def.plugin) continue;
    if (!on_host && !n.on_host && !def.plugin->runs_on(backend.device()))
      throw Error(n.describe() + ": its plugin does not run on " + backend.device_name() + " and the build did not place it on the CPU");
    for (const std::string& v : n.inputs)
      if (v.empty()) throw Error(n.describe() + ": a plugin node takes no omitted inputs");
    for (const std::string& v : n.outputs)
      if (v.empty()) throw Error(n.describe() + ": a plugin node has no omitted outputs");
    plugin_ops[i] = std::make_shared<PluginOp>(n, *def.plugin);
    pl.in_place = plugin_ops[i]->output_may_alias_input(0);
    pl.in_place_only = pl.in_place ? 0 : -1;
    std::vector<Tensor> ins, outs;  // shape-only views, for the plugin to size its workspace
    for (const std::string& in : n.inputs) ins.push_back(Tensor::view(g.value(in).dtype, g.value(in).shape, nullptr));
    for (const std::string& o : n.outputs) outs.push_back(Tensor::view(g.value(o).dtype, g.value(o).shape, nullptr));
    std::vector<const Tensor*> in_ptrs;
    std::vector<Tensor*> out_ptrs;
    for (const Tensor& t : ins) in_ptrs.push_back(&t);
    for (Tensor& t : outs) out_ptrs.push_back(&t);
    if (const size_t ws = plugin_ops[i]->workspace_size(in_ptrs, out_ptrs)) {
      check_allocation(ws, n.describe() + "'s workspace");
      workspace_value[i] = int(plan_values.size());
      plan_values.push_back(PlanValue{PlanValue::Home::Arena, DType::UInt8, Shape{int64_t(ws)}, ws, false, !on_host && n.on_host});
      pl.outputs.push_back(workspace_value[i]);
    }
  }
  for (int s = 0; s < n_slots; ++s) {  // workspaces (past n_slots) know their size already
    if (plan_values[s].home != PlanValue::Home::Arena) continue;
    const ValueInfo& vi = g.value(name_of[s]);
    if (!vi.shape_known) continue;  // an eager region's output: allocated when it runs
    plan_values[s].bytes = checked_tensor_bytes(vi.shape, dtype_size(vi.dtype));
    check_allocation(plan_values[s].bytes, "activation '" + name_of[s] + "' " + shape_str(vi.shape));
  }
  const ActivationPlan plan = plan_activations(plan_values, plan_layers, config_.in_place);
  arena_bytes_ = plan.arena_bytes;
  const std::vector<int>& root_of = plan.root;
  std::vector<Root> root_kind(n_slots);  // slots only: workspaces are arena buffers
  for (int s = 0; s < n_slots; ++s) {
    const PlanValue::Home h = plan_values[root_of[s]].home;
    root_kind[s] = h == PlanValue::Home::Input ? Root::Input : h == PlanValue::Home::Initializer ? Root::Initializer : Root::Arena;
  }
  if (plan.in_place_layers)
    log_.push_back("in-place reuse: " + std::to_string(plan.in_place_layers) + " layers write over an input that dies there");
  check_allocation(arena_bytes_, "the activation arena");
  try {
    arena_ = backend.allocate(arena_bytes_);
  } catch (const Error& e) {
    throw Error("the " + std::to_string(arena_bytes_) + "-byte activation arena: " + e.what());
  }
  std::byte* const arena = static_cast<std::byte*>(arena_.data());
  const std::vector<size_t>& root_offset = plan.offset;
  if (uploaded) constants_ = *uploaded;  // tensors share their storage: the same device memory
  else
    for (const auto& [name, t] : g.initializers) constants_.emplace(name, backend.upload(t));
  const bool falls_back = std::any_of(g.nodes.begin(), g.nodes.end(), [](const Node& n) { return n.on_host; });
  if (falls_back && !on_host) {
    host_backend_ = backend_named("cpu");
    check_allocation(plan.host_arena_bytes, "the host arena of the CPU fallback layers");
    host_arena_ = host_backend_->allocate(plan.host_arena_bytes);
    log_.push_back("host arena (CPU fallback layers): " + std::to_string(plan.host_arena_bytes) + " bytes");
    for (const Node& n : g.nodes)
      for (const std::string& in : n.inputs)
        if (n.on_host && g.is_initializer(in) && !host_constants_.count(in)) {
          const Tensor& t = g.initializers.at(in);
          host_constants_.emplace(in, Tensor::view(t.dtype(), t.shape(), const_cast<void*>(t.raw())));
        }
  }
  std::byte* const host_arena = static_cast<std::byte*>(host_arena_.data());

  if (!on_host)
    for (int s : input_slots_) {
      const ValueInfo& vi = g.value(name_of[s]);
      input_buffers_.push_back(backend.allocate(checked_tensor_bytes(vi.shape, dtype_size(vi.dtype))));
    }
  slots_.resize(n_slots);
  for (const auto& [name, s] : slot_of) {
    const ValueInfo& vi = g.value(name);
    const int r = root_of[s];
    if (!vi.shape_known) continue;  // stays undefined until the eager region assigns it
    switch (root_kind[s]) {
      case Root::Arena:
        slots_[s] = plan_values[r].host ? Tensor::view(vi.dtype, vi.shape, host_arena + root_offset[r])
                                        : Tensor::view(vi.dtype, vi.shape, arena + root_offset[r], backend.device());
        break;
      case Root::Initializer:
        slots_[s] = Tensor::view(vi.dtype, vi.shape, const_cast<void*>(constants_.at(name_of[r]).raw()), backend.device());
        break;
      case Root::Input: {
        // On the host a graph input's slots are views of the caller's tensor, rebound per
        // run; on a device they are views of the input's device buffer, copied into per run.
        slots_[s] = Tensor::view(vi.dtype, vi.shape, nullptr, backend.device());
        for (size_t i = 0; i < input_slots_.size(); ++i) {
          if (input_slots_[i] != r) continue;
          if (on_host) input_aliases_.emplace_back(s, int(i));
          else slots_[s].rebind(input_buffers_[i].data());
        }
        break;
      }
    }
  }
  for (const std::string& o : g.outputs) output_slots_.push_back(slot_of.at(o));

  // Layers.
  is_device_copy_.assign(size_t(n_layers), false);
  for (int i = 0; i < n_layers; ++i) {
    const Node& n = g.nodes[i];
    std::vector<const Tensor*> ins;
    std::vector<Tensor*> outs;
    LayerInfo info{n.name, qualified(n), "", n.precision, n.precision_reason, n.sources, {}, {}, 0};
    const bool eager = n.domain == "fusebench" && n.op_type == "EagerRegion";
    if (eager) info.eager = n.attr_string("reason", "shapes depend on data");
    // Only the eager region sizes its outputs as it runs; any other layer writes into planned memory.
    for (const std::string& o : n.outputs)
      if (!eager && !o.empty() && !slots_[slot_of.at(o)].defined())
        throw Error(n.describe() + ": output '" + o + "' has no static shape outside the eager region");
    for (const std::string& in : n.inputs) {
      const auto host_constant = n.on_host ? host_constants_.find(in) : host_constants_.end();
      ins.push_back(in.empty()                            ? nullptr
                    : host_constant != host_constants_.end() ? &host_constant->second
                                                             : &slots_[slot_of.at(in)]);
      if (!in.empty()) info.input_shapes.push_back(slots_[slot_of.at(in)].shape());
    }
    layer_outputs_.emplace_back();
    for (const std::string& o : n.outputs) {
      outs.push_back(o.empty() ? nullptr : &slots_[slot_of.at(o)]);
      if (!o.empty()) layer_outputs_.back().emplace_back(o, &slots_[slot_of.at(o)]);
      if (!o.empty() && slots_[slot_of.at(o)].defined()) info.output_shapes.push_back(slots_[slot_of.at(o)].shape());
    }
    if (is_view_layer[i]) {
      info.kernel = "view";
      layers_.push_back(nullptr);
    } else {
      const bool copy_to_host = is_copy(n, "CopyToHost");
      if (copy_to_host || is_copy(n, "CopyToDevice")) {
        is_device_copy_[i] = true;
        layers_.push_back(std::make_unique<DeviceCopyLayer>(
            backend, ins[0], outs[0], copy_to_host ? DeviceCopyLayer::Direction::ToHost : DeviceCopyLayer::Direction::ToDevice));
      } else if (plugin_ops[i]) {
        const int w = workspace_value[i];
        void* ws = w < 0 ? nullptr : (plan_values[size_t(w)].host ? host_arena : arena) + root_offset[size_t(w)];
        const bool here = on_host || n.on_host;  // else on the device, queued on its stream
        layers_.push_back(std::make_unique<PluginLayer>(plugin_ops[i], ins, outs, ws, w < 0 ? 0 : plan_values[size_t(w)].bytes,
                                                        here ? Device::Host : backend.device(),
                                                        here ? nullptr : backend.native_stream()));
      } else {
        std::vector<bool> constant_inputs;
        std::vector<const Tensor*> host_constants;
        for (const std::string& in : n.inputs) {
          constant_inputs.push_back(!in.empty() && g.is_initializer(in));
          host_constants.push_back(constant_inputs.back() ? &g.initializers.at(in) : nullptr);
        }
        const Backend& runs_on = n.on_host && host_backend_ ? *host_backend_ : backend;
        layers_.push_back(runs_on.make_layer(LayerRequest{n, op_for(n, *kernels_.ops), *kernels_.ops, ins, outs,
                                                          std::move(constant_inputs), std::move(host_constants),
                                                          config_.winograd, config_.time_algorithms, config_.cuda_graph}));
      }
      // The CPU fallback of a device build says where it runs.
      info.kernel = (n.on_host && host_backend_ ? "cpu:" : "") + layers_.back()->kernel();
      info.flops = layers_.back()->flops();
      for (const Tensor* t : ins)
        if (t) info.bytes += double(t->nbytes());
      for (const Tensor* t : outs)
        if (t) info.bytes += double(t->nbytes());
    }
    infos_.push_back(std::move(info));
  }
  if (config_.cuda_graph)
    log_.push_back("CUDA graph: the plan's " + std::to_string(layers_.size()) +
                   " layers are recorded after the first run and replayed as one launch per run");
}

Engine::~Engine() = default;

std::unique_ptr<RecordedWork> Engine::record_layers() const {
  const Backend& backend = *kernels_.backend;
  try {
    std::unique_ptr<RecordedWork> work = backend.record([&] {
      for (size_t i = 0; i < layers_.size(); ++i) {
        if (!layers_[i]) continue;
        try {
          layers_[i]->run();
        } catch (const std::exception& e) {
          throw Error("layer '" + infos_[i].name + "' (" + infos_[i].kind + ") cannot be recorded: " + e.what());
        }
      }
    });
    if (!work) throw Error("the " + backend.name() + " backend records no graphs");
    return work;
  } catch (const std::exception& e) {
    throw Error(std::string("cuda_graph: ") + e.what() + "; build with \"cuda_graph\": false");
  }
}

void Engine::run(const std::vector<Tensor>& inputs, std::vector<double>* layer_ms) {
  if (inputs.size() != input_slots_.size())
    throw Error("the engine takes " + std::to_string(input_slots_.size()) + " inputs, got " + std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor& s = slots_[input_slots_[i]];
    if (inputs[i].shape() != s.shape() || inputs[i].dtype() != s.dtype())
      throw Error("input '" + graph_.inputs[i].name + "' must be " + dtype_name(s.dtype()) + shape_str(s.shape()) +
                  ", got " + dtype_name(inputs[i].dtype()) + shape_str(inputs[i].shape()));
  }
  const Backend& backend = *kernels_.backend;
  if (backend.device() == Device::Host) {
    for (const auto& [slot, i] : input_aliases_) slots_[slot].rebind(const_cast<void*>(inputs[i].raw()));
  } else {
    backend.use_on_this_thread();  // a serving thread of a load case is not the one that built it
    // The copies in and the layers each between two events on the device's queue: the
    // GPU's own clock for each (trtexec's H2D and GPU compute times).
    if (!h2d_timer_) h2d_timer_ = backend.make_timer(), compute_timer_ = backend.make_timer();
    h2d_timer_->start();
    for (size_t i = 0; i < inputs.size(); ++i)
      backend.copy_to_device(input_buffers_[i].data(), inputs[i].raw(), inputs[i].nbytes());
    h2d_timer_->stop();
    compute_timer_->start();
  }
  if (layer_ms) layer_ms->assign(layers_.size(), 0.0);
  // A profiled run on a device brackets each layer with events on its queue (trtexec's
  // separate profile run): the layers still run back to back, and the times are read
  // once all are done. On the host each layer's own wall time.
  if (layer_ms && compute_timer_ && layer_timers_.empty())
    for (size_t i = 0; i < layers_.size(); ++i) layer_timers_.push_back(layers_[i] ? backend.make_timer() : nullptr);
  // A recorded plan replays as one launch; a profiled run times the layers one by one.
  const bool replay = recorded_ && !layer_ms;
  if (replay) recorded_->replay();
  for (size_t i = 0; i < layers_.size() && !replay; ++i) {
    if (!layers_[i]) continue;
    if (!layer_ms) {
      layers_[i]->run();
      continue;
    }
    if (compute_timer_) {
      layer_timers_[i]->start();
      layers_[i]->run();
      layer_timers_[i]->stop();
      continue;
    }
    const auto t0 = std::chrono::steady_clock::now();
    layers_[i]->run();
    backend.synchronize();
    (*layer_ms)[i] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  if (layer_ms && compute_timer_)
    for (size_t i = 0; i < layers_.size(); ++i)
      if (layer_timers_[i]) (*layer_ms)[i] = layer_timers_[i]->elapsed_ms();
  if (compute_timer_) compute_timer_->stop();
  backend.synchronize();
  // Recorded after a first run, once every layer has made what it makes lazily (algorithm
  // choices, converted constants), so the graph holds only the per-run work.
  if (config_.cuda_graph && !recorded_ && backend.device() != Device::Host) recorded_ = record_layers();
}

std::optional<DeviceTimes> Engine::last_device_times() const {
  if (!compute_timer_) return std::nullopt;
  return DeviceTimes{h2d_timer_->elapsed_ms(), compute_timer_->elapsed_ms(), d2h_ms_};
}

std::map<std::string, Tensor> Engine::run_capture(const std::vector<Tensor>& inputs) {
  std::map<std::string, Tensor> captured;
  // The same plan, run layer by layer; each layer's outputs are copied before a later
  // layer may reuse their memory. The timed runs never pay for this.
  std::vector<Tensor> ins = inputs;
  run(ins);  // validates and binds the inputs
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (layers_[i]) layers_[i]->run();
    kernels_.backend->synchronize();
    if (is_device_copy_[i]) continue;  // its output is a value captured under its own name
    for (const auto& [name, t] : layer_outputs_[i])
      captured[name] = layers_[i] ? layers_[i]->plain_copy(*t) : host_copy(*t, *kernels_.backend);
  }
  return captured;
}

std::vector<std::pair<std::string, Tensor>> Engine::kept_values() const {
  std::vector<std::pair<std::string, Tensor>> kept;
  if (config_.fusion != FusionLevel::MarkAll) {
    const std::vector<Tensor> outs = outputs();
    for (size_t i = 0; i < outs.size(); ++i) kept.emplace_back(graph_.outputs[i], outs[i].clone());  // host copies
    return kept;
  }
  for (size_t i = 0; i < layers_.size(); ++i)
    for (const auto& [name, t] : layer_outputs_[i])
      if (!is_device_copy_[i]) kept.emplace_back(name, layers_[i] ? layers_[i]->plain_copy(*t) : host_copy(*t, *kernels_.backend));
  return kept;
}

std::vector<Tensor> Engine::outputs() const {
  std::vector<Tensor> r;
  const Backend& backend = *kernels_.backend;
  if (backend.device() == Device::Host) {
    for (int s : output_slots_) r.push_back(slots_[s]);
    return r;
  }
  // Copied out of device memory into host tensors kept for the next call, timed apart.
  if (host_outputs_.empty())
    for (int s : output_slots_) host_outputs_.push_back(Tensor::empty(slots_[s].dtype(), slots_[s].shape()));
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < output_slots_.size(); ++i) {
    const Tensor& out = slots_[output_slots_[i]];
    if (out.device() == Device::Host)  // written by a CPU fallback layer
      std::memcpy(host_outputs_[i].raw(), out.raw(), host_outputs_[i].nbytes());
    else
      backend.copy_to_host(host_outputs_[i].raw(), out.raw(), host_outputs_[i].nbytes());
  }
  backend.synchronize();
  d2h_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return host_outputs_;
}

std::unique_ptr<Engine> Engine::make_context() const {
  EngineKernels kernels = kernels_;
  const std::map<std::string, Tensor>* weights = nullptr;
  if (kernels_.backend->device() != Device::Host) {
    kernels.backend = kernels_.backend->with_own_queue();
    if (!kernels.backend) throw Error("the " + kernels_.backend->name() + " backend has no second queue for an execution context");
    weights = &constants_;
  }
  std::unique_ptr<Engine> context(new Engine(graph_, config_, log_, kernels, weights));
  context->replace_build_log(log_);
  context->set_fusion_events(events_);
  return context;
}

}  // namespace fb
