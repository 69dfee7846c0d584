// The CUDA backend: one device, one stream, cuBLASLt and cuDNN handles and a workspace,
// made once per process and device (backend_named); with_own_queue() makes another on the
// same device with a stream, handles and workspace of its own (an execution context's). Its layers come from the op table
// (cuda_layer_table.h): cuBLASLt matrix products with bias/activation epilogues, cuDNN
// convolutions, and kernels of our own for the rest. A node without a row has no CUDA
// layer; the build then fails naming it (no CPU fallback yet).
#pragma once
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cuda/cuda_context.h"
#include "engine/backend/cuda/cuda_device.h"
#include "engine/backend/cuda/cuda_layer_table.h"

namespace fb::cuda {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device_index);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;
  std::string name() const override { return "cuda"; }
  std::string device_name() const override { return "cuda:" + std::to_string(props_.index); }
  Device device() const override { return Device::Cuda; }
  PrecisionSet supported_precisions(const Node& node, const OpDef& def) const override;
  std::unique_ptr<Layer> make_layer(const LayerRequest& request) const override;
  DeviceBuffer allocate(size_t bytes) const override;
  Tensor upload(const Tensor& host) const override;
  void synchronize() const override;
  void copy_to_device(void* dst, const void* host_src, size_t bytes) const override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) const override;
  Tensor to_host(const Tensor& t) const override;
  // Nodes whose row runs them channels-last (convolutions, 2-D pools, same-shape Adds,
  // GlobalAveragePool, Concat and Split over channels, the channel gate, ChannelShuffle,
  // ChannelAffine, Resize, GroupNorm); none while FUSEBENCH_CUDA_CHANNELS_LAST=0 (an A/B against NCHW:
  // read at each question, so a build made after setting it is plain).
  bool runs_channels_last(const Node& node, Precision build_precision) const override;
  std::unique_ptr<DeviceTimer> make_timer() const override;
  std::unique_ptr<RecordedWork> record(const std::function<void()>& enqueue) const override;
  std::optional<MachinePeaks> measure_peaks(int threads) const override;  // cuda_peaks.cpp
  void* native_stream() const override { return ctx_.stream; }
  std::shared_ptr<const Backend> with_own_queue() const override;
  void use_on_this_thread() const override;
  std::optional<size_t> free_device_bytes() const override;
  std::string device_identity() const override;
  DeviceDescription describe_device() const override;
  const DeviceProperties& properties() const { return props_; }

 private:
  struct OwnQueue {};
  CudaBackend(const CudaBackend& same_device, OwnQueue);  // with_own_queue's
  void open_queue();  // the stream, the handles and the workspace of ctx_
  const CudaOpRow* row_for(const Node& node) const;
  bool layer_reads_layouts(const Node& node) const;  // its row runs it channels-last

  DeviceProperties props_;
  CudaContext ctx_;
  std::vector<CudaOpRow> rows_;
  // rows_[moves_bytes_begin_, moves_bytes_end_): the data-movement rows, whose kernels copy
  // bytes and so need every data input in the output's type.
  size_t moves_bytes_begin_ = 0, moves_bytes_end_ = 0;
};

}  // namespace fb::cuda
