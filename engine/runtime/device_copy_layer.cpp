#include "engine/runtime/device_copy_layer.h"

namespace fb {

void DeviceCopyLayer::run() {
  if (direction_ == Direction::ToHost) {
    device_.copy_to_host(to_->raw(), from_->raw(), from_->nbytes());
    device_.synchronize();  // the CPU layer after it reads the bytes at once
    return;
  }
  // Queued after the CPU layer that wrote the bytes. A copy from pageable host memory has
  // taken them by the time it returns (CUDA stages it), so a later CPU layer may reuse the
  // buffer without waiting for the device.
  device_.copy_to_device(to_->raw(), from_->raw(), from_->nbytes());
}

}  // namespace fb
