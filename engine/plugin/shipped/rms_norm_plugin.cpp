// fusebench.plugin.RMSNorm: y = x / sqrt(mean(x², last axis) + epsilon) · weight, in one
// pass per row. The built-in path runs the exported form (Pow, ReduceMean, Add, Sqrt, Div,
// Mul) as four to six layers, each reading and writing the whole tensor; this reads x
// twice and writes y once. Inputs: x [..., D], weight [D] (optional). Attribute epsilon
// (default 1e-6). Float32, plain layout.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "engine/plugin/shipped/shipped_plugins.h"

namespace fb {

namespace {

namespace api = fusebench::plugin;

class RmsNormPlugin : public api::Plugin {
 public:
  explicit RmsNormPlugin(float epsilon) : epsilon_(epsilon) {}
  api::Status infer(const std::vector<api::TensorDesc>& in, std::vector<api::TensorDesc>& out) const override {
    if (in.empty() || in.size() > 2) return api::Status::error("RMSNorm takes x and an optional weight, got " + std::to_string(in.size()) + " inputs");
    if (in[0].shape.empty()) return api::Status::error("RMSNorm: x must have at least one dimension");
    const int64_t d = in[0].shape.back();
    if (in.size() == 2 && in[1].numel() != d)
      return api::Status::error("RMSNorm: weight has " + std::to_string(in[1].numel()) + " elements, x's last axis " + std::to_string(d));
    out = {in[0]};
    return api::Status::success();
  }
  bool output_may_alias_input(size_t output) const override { return output == 0; }
  api::Status execute(const std::vector<api::InputTensor>& in, const std::vector<api::OutputTensor>& out,
                      const api::ExecutionContext& ctx) override {
    const int64_t d = in[0].desc.shape.back(), rows = in[0].desc.numel() / (d ? d : 1);
    const float* x = in[0].as<float>();
    const float* w = in.size() > 1 ? in[1].as<float>() : nullptr;
    float* y = out[0].as<float>();
    const float eps = epsilon_;
    ctx.parallel_for(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(d, 1)), [=](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* xr = x + r * d;
        float* yr = y + r * d;
        // 16 partial sums: lets the compiler vectorize without reassociating one sum.
        float acc[16] = {};
        int64_t i = 0;
        for (; i + 16 <= d; i += 16)
          for (int k = 0; k < 16; ++k) acc[k] += xr[i + k] * xr[i + k];
        float ss = 0;
        for (; i < d; ++i) ss += xr[i] * xr[i];
        for (float a : acc) ss += a;
        const float inv = 1.f / std::sqrt(ss / float(d) + eps);
        if (w)
          for (int64_t j = 0; j < d; ++j) yr[j] = xr[j] * inv * w[j];
        else
          for (int64_t j = 0; j < d; ++j) yr[j] = xr[j] * inv;
      }
    });
    return api::Status::success();
  }

 private:
  float epsilon_;
};

class RmsNormCreator : public api::PluginCreator {
 public:
  std::string domain() const override { return kShippedPluginDomain; }
  std::string op_type() const override { return "RMSNorm"; }
  std::unique_ptr<api::Plugin> create(const api::Attributes& a) const override {
    const float eps = a.get_float("epsilon", 1e-6f);
    if (!(eps >= 0)) throw std::runtime_error("RMSNorm: epsilon must be >= 0");
    return std::make_unique<RmsNormPlugin>(eps);
  }
};

}  // namespace

std::unique_ptr<fusebench::plugin::PluginCreator> make_rms_norm_plugin_creator() {
  return std::make_unique<RmsNormCreator>();
}

}  // namespace fb
