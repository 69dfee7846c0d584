// The CPU backend: oneDNN primitives for matrix products, convolutions, attention and
// pooling (cpu_layers.cpp), kernels of our own for the channels-last ops between
// convolutions (channels_last_layers.cpp), and every other op on its op-table kernel, all
// on host memory. Runs are synchronous.
#pragma once
#include "engine/backend/backend.h"

namespace fb {

class CpuBackend final : public Backend {
 public:
  // Binds its kernels to the op rows it computes (cpu_kernels.h).
  CpuBackend();
  std::string name() const override { return "cpu"; }
  Device device() const override { return Device::Host; }
  // What the op's kernel takes (OpDef::precisions), and bf16/fp16 storage around any
  // float32 kernel (half_storage_layer.h).
  PrecisionSet supported_precisions(const Node& node, const OpDef& def) const override;
  std::unique_ptr<Layer> make_layer(const LayerRequest& request) const override;
  DeviceBuffer allocate(size_t bytes) const override;
  Tensor upload(const Tensor& host) const override { return host; }
  void synchronize() const override {}
  void copy_to_device(void* dst, const void* host_src, size_t bytes) const override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) const override;
  Tensor to_host(const Tensor& t) const override { return t.clone(); }
  // Every node the conv-layout pass may mark: oneDNN's NHWC convolutions and our
  // channels-last layers (channels_last_layers.h) run them all.
  bool runs_channels_last(const Node&, Precision) const override { return true; }
  std::string reduced_precision_note() const override;
  std::map<std::string, std::string> library_versions() const override;
  // A 1024² float32 oneDNN matmul (best of 5) and a 256 MiB parallel copy (best of 3).
  std::optional<MachinePeaks> measure_peaks(int threads) const override;
};

// The CPU layer for one node: a prebuilt oneDNN primitive where one fits, else the op's
// kernel from the engine's registry (cpu_layers.cpp).
std::unique_ptr<Layer> make_cpu_layer(const LayerRequest& request);

}  // namespace fb
