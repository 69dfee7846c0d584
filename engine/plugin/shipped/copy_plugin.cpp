// fusebench.plugin.Copy: output = input, the seed's plugin (DESIGN.md problem 5). Attribute
// `bytes`: -1 (default) copies the whole tensor, N copies only the first N bytes, 0 copies
// nothing. It allows its output to take its input's buffer, so where the engine places
// them together, copying less than everything (or nothing) still leaves the right answer;
// where it cannot (the input is read later), only the copied bytes are right, and the
// accuracy check says so. It takes any dtype and layout: it moves bytes. In a GPU build
// (where fusebench has the CUDA backend) it runs on the GPU too: one cudaMemcpyAsync on the
// engine's stream, as the seed's TensorRT plugin copied.
#include <algorithm>
#include <cstring>

#ifdef FUSEBENCH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "engine/plugin/shipped/shipped_plugins.h"

namespace fb {

namespace {

namespace api = fusebench::plugin;

class CopyPlugin : public api::Plugin {
 public:
  explicit CopyPlugin(int64_t bytes) : bytes_(bytes) {}
  api::Status infer(const std::vector<api::TensorDesc>& in, std::vector<api::TensorDesc>& out) const override {
    if (in.size() != 1) return api::Status::error("Copy takes 1 input, got " + std::to_string(in.size()));
    out = {in[0]};
    return api::Status::success();
  }
  bool supports(size_t index, const std::vector<api::TensorDesc>& io) const override {
    return index == 0 || (io[index].dtype == io[0].dtype && io[index].layout == io[0].layout);
  }
  bool output_may_alias_input(size_t output) const override { return output == 0; }
  api::Status execute(const std::vector<api::InputTensor>& in, const std::vector<api::OutputTensor>& out,
                      const api::ExecutionContext& ctx) override {
    const size_t total = in[0].desc.bytes();
    const size_t n = bytes_ < 0 ? total : std::min<size_t>(size_t(bytes_), total);
    if (n == 0 || out[0].data == in[0].data) return api::Status::success();
    if (ctx.device() == api::Device::Cuda) {
#ifdef FUSEBENCH_HAVE_CUDA
      const cudaError_t e =
          cudaMemcpyAsync(out[0].data, in[0].data, n, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(ctx.stream()));
      return e == cudaSuccess ? api::Status::success() : api::Status::error(std::string("cudaMemcpyAsync: ") + cudaGetErrorString(e));
#else
      return api::Status::error("this fusebench has no CUDA backend");
#endif
    }
    const auto* src = static_cast<const std::byte*>(in[0].data);
    auto* dst = static_cast<std::byte*>(out[0].data);
    constexpr int64_t kChunk = 1 << 16;  // bytes per task: memcpy of one chunk outlasts its scheduling
    ctx.parallel_for((int64_t(n) + kChunk - 1) / kChunk, 1, [&](int64_t b, int64_t e) {
      const size_t lo = size_t(b) * kChunk, hi = std::min(n, size_t(e) * kChunk);
      std::memcpy(dst + lo, src + lo, hi - lo);
    });
    return api::Status::success();
  }

 private:
  int64_t bytes_;
};

class CopyCreator : public api::PluginCreator {
 public:
  std::string domain() const override { return kShippedPluginDomain; }
  std::string op_type() const override { return "Copy"; }
  std::unique_ptr<api::Plugin> create(const api::Attributes& a) const override {
    return std::make_unique<CopyPlugin>(a.get_int("bytes", -1));
  }
#ifdef FUSEBENCH_HAVE_CUDA
  bool runs_on(api::Device) const override { return true; }
#endif
};

}  // namespace

std::unique_ptr<fusebench::plugin::PluginCreator> make_copy_plugin_creator() { return std::make_unique<CopyCreator>(); }

}  // namespace fb
