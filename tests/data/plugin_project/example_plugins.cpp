// Two plugins in the "example" domain:
//   example.ScaleShift: y = x * scale + shift (attributes), float32, any shape; a
//     workspace of one float per thread, to exercise the arena-planned workspace.
//   example.Fail: always fails at execute, by throwing (mode "throw", the default) or by
//     returning an error Status (mode "status").
#include <fusebench/plugin.h>

#include <stdexcept>

#ifdef FAKE_API_VERSION
#undef FUSEBENCH_PLUGIN_API_VERSION
#define FUSEBENCH_PLUGIN_API_VERSION FAKE_API_VERSION
#endif

namespace {

using namespace fusebench::plugin;

class ScaleShift : public Plugin {
 public:
  ScaleShift(float scale, float shift) : scale_(scale), shift_(shift) {}
  Status infer(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out) const override {
    if (in.size() != 1) return Status::error("ScaleShift takes one input");
    out = {in[0]};
    return Status::success();
  }
  size_t workspace_size(const std::vector<TensorDesc>&, const std::vector<TensorDesc>&) const override { return 4096; }
  Status execute(const std::vector<InputTensor>& in, const std::vector<OutputTensor>& out,
                 const ExecutionContext& ctx) override {
    if (!ctx.workspace() || ctx.workspace_bytes() < 4096) return Status::error("no workspace");
    const float* x = in[0].as<float>();
    float* y = out[0].as<float>();
    const float a = scale_, b = shift_;
    ctx.parallel_for(in[0].desc.numel(), 1024, [=](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) y[i] = x[i] * a + b;
    });
    return Status::success();
  }

 private:
  float scale_, shift_;
};

class Fail : public Plugin {
 public:
  explicit Fail(std::string mode) : mode_(std::move(mode)) {}
  Status infer(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out) const override {
    out = {in.at(0)};
    return Status::success();
  }
  Status execute(const std::vector<InputTensor>&, const std::vector<OutputTensor>&, const ExecutionContext&) override {
    if (mode_ == "status") return Status::error("example failure by status");
    throw std::runtime_error("example failure by exception");
  }

 private:
  std::string mode_;
};

template <class P>
class Creator : public PluginCreator {
 public:
  explicit Creator(std::string op) : op_(std::move(op)) {}
  std::string domain() const override { return "example"; }
  std::string op_type() const override { return op_; }
  std::unique_ptr<Plugin> create(const Attributes& a) const override {
    if constexpr (std::is_same_v<P, ScaleShift>) return std::make_unique<ScaleShift>(a.get_float("scale", 1), a.get_float("shift", 0));
    else return std::make_unique<Fail>(a.get_string("mode", "throw"));
  }

 private:
  std::string op_;
};

void register_example_plugins(Registrar& r) {
  r.add(std::make_unique<Creator<ScaleShift>>("ScaleShift"));
  r.add(std::make_unique<Creator<Fail>>("Fail"));
}

}  // namespace

FUSEBENCH_PLUGIN_LIBRARY(register_example_plugins)
