// Tensors on disk, for exchanging inputs and outputs with other runtimes: numpy's .npy
// and ONNX's TensorProto .pb (the format of ONNX's own test data sets).
//
// .npy: versions 1.0, 2.0 and 3.0 are read; little-endian, C order only (big-endian and
// fortran_order are errors naming the file). Every dtype numpy can express is supported:
// f2 f4 f8, i1..i8, u1..u8, b1. bfloat16 has no numpy type code, so writing it as .npy is
// an error (use .pb, which holds it). Sizes are checked against the file's length before
// anything is allocated, so a damaged file is an error, never a crash or a huge allocation.
// .pb: the engine's own tensor_from_proto/tensor_to_proto (engine/onnx/onnx_import.h).
#pragma once
#include <set>
#include <string>

#include "engine/ir/tensor.h"

namespace fb {

// Reads a .npy or .pb file, chosen by extension; errors name the file.
Tensor read_tensor_file(const std::string& path);
// Writes `t` as .npy (version 1.0, or 2.0 when the header needs it).
void write_npy(const std::string& path, const Tensor& t);
// The file name `exec --save-outputs` gives a tensor: letters, digits, '.', '_' and '-'
// kept, the rest '_', then ".npy"; a name already in `taken` gets "_2", "_3", ... so that
// no tensor overwrites another. Adds the name it returns to `taken`.
std::string npy_file_name(const std::string& tensor, std::set<std::string>& taken);
// Writes `t` as a serialized onnx::TensorProto named `name` (raw_data).
void write_tensor_pb(const std::string& path, const Tensor& t, const std::string& name);

}  // namespace fb
