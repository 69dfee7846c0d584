// The layers device placement inserts around a CPU fallback (engine/passes/
// device_placement.cpp): a copy from the device's memory to the host's before the CPU
// layer reads it, and back after it wrote. They run on the device backend's queue, so
// profile times them between its events like any other layer.
#pragma once
#include "engine/backend/backend.h"

namespace fb {

class DeviceCopyLayer final : public Layer {
 public:
  enum class Direction { ToHost, ToDevice };
  DeviceCopyLayer(const Backend& device, const Tensor* from, Tensor* to, Direction direction)
      : device_(device), from_(from), to_(to), direction_(direction) {}
  void run() override;
  std::string kernel() const override {
    return direction_ == Direction::ToHost ? "copy.device_to_host" : "copy.host_to_device";
  }
  Tensor plain_copy(const Tensor& output) const override {
    return direction_ == Direction::ToHost ? output.clone() : device_.to_host(output);
  }

 private:
  const Backend& device_;
  const Tensor* from_;
  Tensor* to_;
  Direction direction_;
};

}  // namespace fb
