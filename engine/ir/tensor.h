// A dense row-major tensor: dtype, static shape and a data pointer. A Tensor either owns
// its (64-byte aligned) storage through a shared buffer, or is a view into memory owned
// elsewhere (the engine's activation arena). Copying a Tensor shares, never duplicates.
#pragma once
#include <cstddef>
#include <memory>
#include <span>

#include "engine/ir/dtype.h"
#include "engine/ir/error.h"
#include "engine/ir/shape.h"

namespace fb {

// Where a tensor's bytes live: host memory, or a CUDA device's (engine/backend/cuda/),
// whose addresses host code must not dereference.
enum class Device : uint8_t { Host, Cuda };

class Tensor {
 public:
  Tensor() = default;
  // Allocates zero-filled storage.
  Tensor(DType dtype, Shape shape);
  Tensor(DType dtype, Shape shape, bool zero_fill);
  // Allocates storage without clearing it (for outputs a kernel overwrites in full).
  static Tensor empty(DType dtype, Shape shape);
  // A non-owning view of `data`, which lives on `device`.
  static Tensor view(DType dtype, Shape shape, void* data, Device device = Device::Host);
  // A tensor owning `storage` (a device backend's allocation, with its own deleter).
  static Tensor adopt(DType dtype, Shape shape, std::shared_ptr<std::byte> storage, Device device);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  bool defined() const { return dtype_ != DType::Undefined; }
  Device device() const { return device_; }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  // Typed host access; raw() is the address on any device.
  template <typename T> T* data() {
    FB_CHECK(dtype_of<T>() == dtype_ && device_ == Device::Host, "tensor is " + dtype_name(dtype_));
    return static_cast<T*>(data_);
  }
  template <typename T> const T* data() const {
    FB_CHECK(dtype_of<T>() == dtype_ && device_ == Device::Host, "tensor is " + dtype_name(dtype_));
    return static_cast<const T*>(data_);
  }
  template <typename T> std::span<const T> values() const { return {data<T>(), size_t(numel())}; }

  // Points a non-owning view at other memory (the engine rebinds input views per run).
  void rebind(void* data) {
    FB_CHECK(!storage_, "rebind on an owning tensor");
    data_ = data;
  }
  // A deep copy with its own storage.
  Tensor clone() const;
  // The same bytes under another shape of as many elements, sharing the storage.
  Tensor reshaped(Shape shape) const;
  // Whether the bytes are this tensor's own (shared) storage, not a view of memory owned elsewhere.
  bool owns_storage() const { return storage_ != nullptr; }
  // Whether another Tensor shares this storage (a reshaped alias, a copy): then writing in place is unsafe.
  bool storage_shared() const { return storage_.use_count() > 1; }
  // Integer tensor contents as int64 (for shape-like inputs: Reshape's shape, axes, ...).
  std::vector<int64_t> as_int64_vector() const;
  // Scalar or one-element tensor as double.
  double scalar_as_double() const;

 private:
  DType dtype_ = DType::Undefined;
  Shape shape_;
  std::shared_ptr<std::byte> storage_;
  void* data_ = nullptr;
  Device device_ = Device::Host;
};

}  // namespace fb
