#include "engine/ir/tensor.h"

#include <cstdlib>
#include <cstring>

#include "engine/ir/memory_limit.h"

namespace fb {

Tensor::Tensor(DType dtype, Shape shape) : Tensor(dtype, std::move(shape), true) {}

Tensor Tensor::empty(DType dtype, Shape shape) { return Tensor(dtype, std::move(shape), false); }

Tensor::Tensor(DType dtype, Shape shape, bool zero_fill) : dtype_(dtype), shape_(std::move(shape)) {
  for (int64_t d : shape_)
    if (d < 0) throw Error("negative dimension in shape " + shape_str(shape_));
  const size_t bytes = checked_tensor_bytes(shape_, dtype_size(dtype_));
  check_allocation(bytes, "a " + std::string(dtype_name(dtype_)) + " tensor of shape " + shape_str(shape_));
  size_t padded = (bytes + 63) / 64 * 64;
  if (padded == 0) padded = 64;
  void* p = std::aligned_alloc(64, padded);
  if (!p) throw Error("out of memory allocating " + std::to_string(bytes) + " bytes");
  if (zero_fill) std::memset(p, 0, padded);
  storage_ = std::shared_ptr<std::byte>(static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); });
  data_ = p;
}

Tensor Tensor::view(DType dtype, Shape shape, void* data, Device device) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.data_ = data;
  t.device_ = device;
  return t;
}

Tensor Tensor::adopt(DType dtype, Shape shape, std::shared_ptr<std::byte> storage, Device device) {
  Tensor t = view(dtype, std::move(shape), storage.get(), device);
  t.storage_ = std::move(storage);
  return t;
}

Tensor Tensor::clone() const {
  FB_CHECK(device_ == Device::Host, "clone of a device tensor (its backend copies it to the host)");
  Tensor t(dtype_, shape_);
  if (nbytes()) std::memcpy(t.data_, data_, nbytes());
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  FB_CHECK(shape_numel(shape) == numel(), "reshape of " + shape_str(shape_) + " to " + shape_str(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

std::vector<int64_t> Tensor::as_int64_vector() const {
  std::vector<int64_t> v(static_cast<size_t>(numel()));
  switch (dtype_) {
    case DType::Int64: for (size_t i = 0; i < v.size(); ++i) v[i] = data<int64_t>()[i]; break;
    case DType::Int32: for (size_t i = 0; i < v.size(); ++i) v[i] = data<int32_t>()[i]; break;
    case DType::Int8: for (size_t i = 0; i < v.size(); ++i) v[i] = data<int8_t>()[i]; break;
    case DType::UInt8: for (size_t i = 0; i < v.size(); ++i) v[i] = data<uint8_t>()[i]; break;
    default: throw Error("expected an integer tensor, got " + dtype_name(dtype_));
  }
  return v;
}

double Tensor::scalar_as_double() const {
  if (numel() != 1) throw Error("expected a one-element tensor, got shape " + shape_str(shape_));
  switch (dtype_) {
    case DType::Float32: return data<float>()[0];
    case DType::Float64: return data<double>()[0];
    case DType::Int64: return static_cast<double>(data<int64_t>()[0]);
    case DType::Int32: return data<int32_t>()[0];
    case DType::Int8: return data<int8_t>()[0];
    case DType::UInt8: return data<uint8_t>()[0];
    case DType::Bool: return data<bool>()[0];
    default: throw Error("cannot read a scalar of type " + dtype_name(dtype_));
  }
}

}  // namespace fb
