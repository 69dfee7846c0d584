// Element types the engine understands, and their sizes and names.
// The numbering follows onnx::TensorProto_DataType so import is a plain cast.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace fb {

enum class DType : int32_t {
  Undefined = 0,
  Float32 = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Float64 = 11,
  UInt32 = 12,
  UInt64 = 13,
  BFloat16 = 16,
};

// Bytes per element; 0 for types the engine cannot hold in a flat buffer (String, Undefined).
size_t dtype_size(DType t);
std::string dtype_name(DType t);
bool dtype_is_float(DType t);

template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::Float32; }
template <> constexpr DType dtype_of<double>() { return DType::Float64; }
template <> constexpr DType dtype_of<int64_t>() { return DType::Int64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::Int32; }
template <> constexpr DType dtype_of<int16_t>() { return DType::Int16; }
template <> constexpr DType dtype_of<int8_t>() { return DType::Int8; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::UInt8; }
template <> constexpr DType dtype_of<uint16_t>() { return DType::UInt16; }
template <> constexpr DType dtype_of<uint32_t>() { return DType::UInt32; }
template <> constexpr DType dtype_of<uint64_t>() { return DType::UInt64; }
template <> constexpr DType dtype_of<bool>() { return DType::Bool; }

}  // namespace fb
