#include "engine/plugin/plugin_op.h"

#include <algorithm>
#include <cstdlib>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

namespace fb {

namespace {

namespace api = fusebench::plugin;

// The node's attributes as the API sees them.
class NodeAttributes : public api::Attributes {
 public:
  explicit NodeAttributes(const Node& n) : n_(n) {}
  bool has(const std::string& k) const override { return n_.has_attr(k); }
  int64_t get_int(const std::string& k, int64_t def) const override { return n_.attr_int(k, def); }
  float get_float(const std::string& k, float def) const override { return n_.attr_float(k, def); }
  std::string get_string(const std::string& k, const std::string& def) const override { return n_.attr_string(k, def); }
  std::vector<int64_t> get_ints(const std::string& k) const override { return n_.attr_ints(k); }
  std::vector<float> get_floats(const std::string& k) const override { return n_.attr_floats(k); }

 private:
  const Node& n_;
};

class TbbExecutionContext : public api::ExecutionContext {
 public:
  TbbExecutionContext(void* ws, size_t bytes, Device device, void* stream)
      : ws_(ws), bytes_(bytes), device_(device), stream_(stream) {}
  int threads() const override { return tbb::this_task_arena::max_concurrency(); }
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) const override {
    if (n <= 0) return;
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, std::max<int64_t>(1, grain)),
                      [&](const tbb::blocked_range<int64_t>& r) { body(r.begin(), r.end()); });
  }
  void* workspace() const override { return bytes_ ? ws_ : nullptr; }
  size_t workspace_bytes() const override { return bytes_; }
  api::Device device() const override { return device_ == Device::Cuda ? api::Device::Cuda : api::Device::Cpu; }
  void* stream() const override { return stream_; }

 private:
  void* ws_;
  size_t bytes_;
  Device device_;
  void* stream_;
};

bool api_dtype_known(DType t) {
  switch (t) {
    case DType::Float32: case DType::UInt8: case DType::Int8: case DType::Int32: case DType::Int64: case DType::Bool:
    case DType::Float16: case DType::BFloat16: return true;
    default: return false;
  }
}

api::TensorDesc desc_of(DType t, const Shape& s) { return api::TensorDesc{api::DataType(int32_t(t)), s, api::Layout::Plain}; }

}  // namespace

PluginOp::PluginOp(const Node& node, PluginCreatorEntry entry) : node_desc_(node.describe()), entry_(std::move(entry)) {
  try {
    plugin_ = entry_.creator->create(NodeAttributes(node));
  } catch (const std::exception& e) {
    fail(std::string("refused the node's attributes: ") + e.what());
  } catch (...) {
    fail("threw a non-standard exception creating the plugin");
  }
  if (!plugin_) fail("made no plugin for the node (its creator returned null)");
}

std::string PluginOp::describe() const { return "plugin '" + entry_.qualified_name() + "' (" + entry_.origin + ")"; }

void PluginOp::fail(const std::string& what) const { throw Error(node_desc_ + ": " + describe() + " " + what); }

std::vector<ValueInfo> PluginOp::infer(const std::vector<const ValueInfo*>& inputs) const {
  std::vector<api::TensorDesc> in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) fail("got an omitted input " + std::to_string(i) + "; plugins take every input they are given");
    if (!api_dtype_known(inputs[i]->dtype)) fail("cannot take input " + std::to_string(i) + " of type " + dtype_name(inputs[i]->dtype));
    in.push_back(desc_of(inputs[i]->dtype, inputs[i]->shape));
  }
  std::vector<api::TensorDesc> out;
  api::Status st;
  try {
    st = plugin_->infer(in, out);
  } catch (const std::exception& e) {
    st = api::Status::error(e.what());
  } catch (...) {
    st = api::Status::error("a non-standard exception");
  }
  if (!st.ok) fail("failed shape inference: " + st.message);
  if (out.empty()) fail("inferred no outputs");
  std::vector<api::TensorDesc> io = in;
  io.insert(io.end(), out.begin(), out.end());
  for (size_t i = 0; i < io.size(); ++i) {
    if (io[i].layout != api::Layout::Plain) fail("inferred a non-plain layout for output " + std::to_string(i - in.size()));
    bool ok = false;
    try {
      ok = plugin_->supports(i, io);
    } catch (...) {
    }
    if (!ok) {
      const bool is_in = i < in.size();
      fail(std::string("does not support ") + (is_in ? "input " : "output ") + std::to_string(is_in ? i : i - in.size()) +
           " as " + dtype_name(DType(int32_t(io[i].dtype))) + " in plain layout (the formats fusebench hands plugins)");
    }
  }
  std::vector<ValueInfo> r;
  for (const api::TensorDesc& d : out) {
    for (int64_t dim : d.shape)
      if (dim < 0) fail("inferred a negative dimension");
    r.push_back(ValueInfo{DType(int32_t(d.dtype)), d.shape, true});
  }
  return r;
}

size_t PluginOp::workspace_size(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs) const {
  std::vector<api::TensorDesc> in, out;
  for (const Tensor* t : inputs) in.push_back(desc_of(t->dtype(), t->shape()));
  for (const Tensor* t : outputs) out.push_back(desc_of(t->dtype(), t->shape()));
  try {
    return plugin_->workspace_size(in, out);
  } catch (const std::exception& e) {
    fail(std::string("failed to say its workspace size: ") + e.what());
  } catch (...) {
    fail("threw a non-standard exception from workspace_size");
  }
}

bool PluginOp::output_may_alias_input(size_t output) const {
  try {
    return plugin_->output_may_alias_input(output);
  } catch (...) {
    return false;
  }
}

void PluginOp::execute(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs, void* workspace,
                       size_t workspace_bytes, Device device, void* stream) {
  std::vector<api::InputTensor> in;
  std::vector<api::OutputTensor> out;
  for (const Tensor* t : inputs) in.push_back(api::InputTensor{desc_of(t->dtype(), t->shape()), t->raw()});
  for (Tensor* t : outputs) out.push_back(api::OutputTensor{desc_of(t->dtype(), t->shape()), t->raw()});
  TbbExecutionContext ctx(workspace, workspace_bytes, device, stream);
  api::Status st;
  try {
    st = plugin_->execute(in, out, ctx);
  } catch (const std::exception& e) {
    st = api::Status::error(std::string("threw: ") + e.what());
  } catch (...) {
    st = api::Status::error("threw a non-standard exception");
  }
  if (!st.ok) fail("failed: " + st.message);
}

std::vector<Tensor> evaluate_plugin(const Node& node, const PluginCreatorEntry& entry,
                                    const std::vector<const Tensor*>& inputs, const Tensor* reusable_input0) {
  PluginOp op(node, entry);
  std::vector<ValueInfo> infos(inputs.size());
  std::vector<const ValueInfo*> in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i]) infos[i] = ValueInfo{inputs[i]->dtype(), inputs[i]->shape(), true};
    in.push_back(inputs[i] ? &infos[i] : nullptr);
  }
  const std::vector<ValueInfo> out_infos = op.infer(in);
  std::vector<Tensor> outs;
  for (size_t i = 0; i < out_infos.size(); ++i) {
    const bool reuse = i == 0 && reusable_input0 && op.output_may_alias_input(0) &&
                       reusable_input0->dtype() == out_infos[0].dtype && reusable_input0->shape() == out_infos[0].shape;
    outs.push_back(reuse ? *reusable_input0 : Tensor::empty(out_infos[i].dtype, out_infos[i].shape));  // a copy shares storage
  }
  std::vector<Tensor*> out_ptrs;
  for (Tensor& t : outs) out_ptrs.push_back(&t);
  const size_t ws = op.workspace_size(inputs, out_ptrs);
  std::unique_ptr<void, void (*)(void*)> workspace(ws ? std::aligned_alloc(64, (ws + 63) / 64 * 64) : nullptr, std::free);
  if (ws && !workspace) throw Error(node.describe() + ": " + op.describe() + ": out of memory for a " + std::to_string(ws) + "-byte workspace");
  op.execute(inputs, out_ptrs, workspace.get(), ws);
  return outs;
}

}  // namespace fb
